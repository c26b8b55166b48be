"""docs/kubernetes.md's manifests, applied to a real kube-apiserver."""
from __future__ import annotations

import json

import common


def test_the_docs_manifests_apply(k8s, admin, namespace):
    core, _, api = admin
    from kubernetes import client
    docs = common.manifests()
    kinds = [d["kind"] for d in docs]
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Pod"]
    for d in docs:
        if d["kind"] != "Pod":
            common.apply(api, d)
    dep = client.AppsV1Api(api).read_namespaced_deployment("alloc-scheduler", "kube-system")
    assert dep.spec.replicas == 1 and dep.spec.strategy.type == "Recreate"
    assert dep.spec.template.spec.service_account_name == "alloc-scheduler"
    # the example pod is valid as written (created for real, then removed)
    pod = next(d for d in docs if d["kind"] == "Pod")
    common.apply(api, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": pod["spec"]["priorityClassName"]}, "value": 100})
    made = json.loads(core.create_namespaced_pod(namespace, pod, _preload_content=False).data)
    assert made["spec"]["schedulerName"] == "alloc"
    core.delete_namespaced_pod(made["metadata"]["name"], namespace, grace_period_seconds=0)


def test_the_cluster_role_is_what_the_scheduler_may_do(k8s, admin):
    """As the docs' service account: what it needs is allowed, the rest is not."""
    core, _, api = admin
    common.rbac(api)
    from kubernetes import client, config
    sa = config.new_client_from_config(config_file=k8s["ALLOC_K8S_SCHEDULER_KUBECONFIG"])
    authz = client.AuthorizationV1Api(sa)

    def can(verb, resource, sub=None, group=""):
        r = authz.create_self_subject_access_review({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                            "subresource": sub, "group": group,
                                            "namespace": "default"}}})
        return r.status.allowed
    assert can("list", "nodes") and can("watch", "pods") and can("delete", "pods")
    assert can("create", "pods", "binding") and can("create", "events")
    assert can("watch", "podgroups", group="scheduling.x-k8s.io")
    assert not can("update", "nodes") and not can("create", "pods") and not can("get", "secrets")
