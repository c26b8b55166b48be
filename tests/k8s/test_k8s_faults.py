"""Bad input and faults against a real kube-apiserver: `alloc k8s run --once` as the
docs' service account."""
from __future__ import annotations

import json
import subprocess
import sys

import common
import harness


def _once(k8s, tmp_path, *extra) -> tuple[list[dict], str]:
    n = len(list(tmp_path.glob("decisions-*.jsonl")))
    dec = tmp_path / f"decisions-{n}.jsonl"
    p = subprocess.run([sys.executable, "-m", "alloc", "k8s", "run", "--once",
                        "--kubeconfig", k8s["ALLOC_K8S_SCHEDULER_KUBECONFIG"],
                        "--decisions", str(dec), *extra],
                       cwd=common.ROOT, env={**__import__("os").environ,
                                             "PYTHONPATH": str(common.ROOT)},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    return harness.decisions(dec), p.stderr


def _setup(admin, nodes=2):
    core, _, api = admin
    common.rbac(api)
    common.podgroup_crd(api)
    common.priority_classes(api)
    for i in range(nodes):
        core.create_node(harness.node(f"f{i}", labels={harness.RACK: f"r{i}"}))


def test_bad_input_waits_with_a_warning_and_affects_nothing_else(k8s, admin, namespace, tmp_path):
    core, custom, _ = admin
    _setup(admin)
    ns = namespace
    custom.create_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", ns, "podgroups",
        {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
         "metadata": {"name": "short"}, "spec": {"minMember": 5}})
    bad = {
        "no-type": harness.pod("no-type", product="T4"),
        "bad-topo": harness.pod("bad-topo", required="example.com/no-such-level"),
        "neg": harness.pod("neg", milli=-250, cpu="1"),
    }
    bad.update({f"short-{k}": harness.pod(f"short-{k}", group="short") for k in range(3)})
    for p in bad.values():
        harness.create(core, ns, p)
    harness.create(core, ns, harness.pod("fine", gpus=2))
    # the API server itself refuses a negative CPU request
    from kubernetes.client.rest import ApiException
    try:
        harness.create(core, ns, harness.pod("neg-cpu", cpu="-1"))
        raise AssertionError("a negative CPU request was accepted")
    except ApiException as exc:
        assert exc.status == 422
    d, err = _once(k8s, tmp_path)
    now = harness.pods(core, ns)
    assert now["fine"]["spec"].get("nodeName"), "the good pod was not bound"
    assert [x["job"] for x in d if x["action"] == "start"] == [f"{ns}/fine"]
    warn = common.pod_events(core, ns, "FailedScheduling")
    for name in bad:
        assert not now[name]["spec"].get("nodeName"), name
        assert name in warn and warn[name][0]["type"] == "Warning", name
    assert "T4" in warn["no-type"][0]["message"]
    assert "podset-required-topology" in warn["bad-topo"][0]["message"]
    assert "negative" in warn["neg"][0]["message"]
    assert "min-member 5 exceeds its 3 pods" in warn["short-0"][0]["message"]
    pg_events = [e for e in common.events(core, ns) if e["involvedObject"]["kind"] == "PodGroup"]
    assert pg_events and pg_events[0]["type"] == "Warning"
    lines = [line for line in err.splitlines() if "the pod waits" in line]
    # one line per problem (the pod group's three pods share one)
    assert len(lines) == 4, err
    # a second pass repeats neither the log lines nor the Events
    d2, err2 = _once(k8s, tmp_path)
    assert not [x for x in d2 if x["action"] == "start"]
    assert len(common.pod_events(core, ns, "FailedScheduling")["neg"]) >= 1


def test_a_gang_bound_in_part_is_rolled_back_on_restart(k8s, admin, namespace, tmp_path):
    core, _, _ = admin
    _setup(admin)
    ns = namespace
    for k in range(4):
        harness.create(core, ns, harness.pod(f"pg-{k}", group="pg", min_member=4))
    # a scheduler that stopped after two of the four bindings
    for k in range(2):
        core.create_namespaced_pod_binding(
            f"pg-{k}", ns, {"apiVersion": "v1", "kind": "Binding",
                            "metadata": {"name": f"pg-{k}", "annotations": {
                                "alloc.io/gpus": str(k), "alloc.io/gang": "pg",
                                "alloc.io/gang-size": "4"}},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": "f0"}},
            _preload_content=False)
    d, err = _once(k8s, tmp_path)
    rb = [x for x in d if x["action"] == "rollback"]
    assert rb and rb[0]["job"] == f"{ns}/pg" and sorted(rb[0]["pods"]) == [f"{ns}/pg-0", f"{ns}/pg-1"]
    now = harness.pods(core, ns)
    for k in range(2):
        assert f"pg-{k}" not in now or now[f"pg-{k}"]["metadata"].get("deletionTimestamp")
    assert not [x for x in d if x["action"] == "start"]
    assert "GangRollback" in {e["reason"] for e in common.events(core, ns)}


def test_a_failed_binding_rolls_the_gang_back(k8s, admin, namespace, tmp_path):
    core, _, api = admin
    _setup(admin)
    ns = namespace
    from kubernetes import client
    adm = client.AdmissionregistrationV1Api(api)
    name = f"deny-{ns}"
    adm.create_validating_admission_policy({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{
                     "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                     "resources": ["pods/binding"]}]},
                 "validations": [{"expression": "!object.metadata.name.startsWith('gx-2')",
                                  "message": "gx-2 may not be bound"}]}})
    adm.create_validating_admission_policy_binding({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": ns}}}}})
    try:
        for k in range(4):
            harness.create(core, ns, harness.pod(f"gx-{k}", group="gx", min_member=4))

        probes = iter(range(1000))

        def denied() -> bool:          # the policy is in force (it is read asynchronously)
            probe = f"gx-2-probe-{next(probes)}"        # a bound pod cannot be bound again
            harness.create(core, ns, harness.pod(probe, scheduler="nobody"))
            try:
                core.create_namespaced_pod_binding(
                    probe, ns, {"apiVersion": "v1", "kind": "Binding",
                                "metadata": {"name": probe},
                                "target": {"kind": "Node", "name": "f0"}},
                    _preload_content=False)
            except Exception as e:    # only the policy's own refusal counts
                return "may not be bound" in str(getattr(e, "body", "") or e)
            finally:
                core.delete_namespaced_pod(probe, ns, grace_period_seconds=0)
            return False
        harness.wait(denied, 30, tick=0.5, what="the admission policy")
        d, err = _once(k8s, tmp_path)
    finally:
        adm.delete_validating_admission_policy_binding(name)
        adm.delete_validating_admission_policy(name)
    rb = [x for x in d if x["action"] == "rollback"]
    assert rb and sorted(rb[0]["pods"]) == [f"{ns}/gx-0", f"{ns}/gx-1"], (d, err)
    now = harness.pods(core, ns)
    for k in range(2):
        p = now.get(f"gx-{k}")
        assert p is None or p["metadata"].get("deletionTimestamp"), p
    for k in (2, 3):
        assert not now[f"gx-{k}"]["spec"].get("nodeName")
    assert not [x for x in d if x["action"] == "start"]
    assert "gx-2 may not be bound" in err


def test_a_deleted_node_drains_its_pods(k8s, admin, namespace, tmp_path):
    core, _, _ = admin
    _setup(admin)
    ns = namespace
    harness.create(core, ns, harness.pod("a", gpus=8))
    harness.create(core, ns, harness.pod("b", gpus=8))
    d, _ = _once(k8s, tmp_path)
    where = {p: n for x in d if x["action"] == "start" for p, n in x["pods"].items()}
    assert sorted(where.values()) == ["f0", "f1"]
    core.delete_node(where[f"{ns}/a"])
    harness.create(core, ns, harness.pod("c", gpus=4))
    d2, err = _once(k8s, tmp_path)
    ev = [x for x in d2 if x["action"] == "evict"]
    assert [x["job"] for x in ev] == [f"{ns}/a"], d2
    now = harness.pods(core, ns)
    assert "a" not in now or now["a"]["metadata"].get("deletionTimestamp")
    assert "NodeDeleted" in {e["reason"] for e in common.events(core, ns)}
    # the other node is full: c waits, with a reason
    assert not now["c"]["spec"].get("nodeName")
    assert json.dumps(common.pod_events(core, ns, "FailedScheduling").get("c", []))


def test_a_cordoned_node_takes_nothing_new(k8s, admin, namespace, tmp_path):
    core, _, _ = admin
    _setup(admin)
    ns = namespace
    core.patch_node("f0", {"spec": {"unschedulable": True}})
    for k in range(3):
        harness.create(core, ns, harness.pod(f"p{k}", gpus=4))
    d, _ = _once(k8s, tmp_path)
    now = harness.pods(core, ns)
    nodes = sorted(p["spec"].get("nodeName") or "-" for p in now.values())
    assert nodes == ["-", "f1", "f1"], nodes
