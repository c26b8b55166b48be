"""A real kube-apiserver for the tests of this folder (see controlplane.py).

CI starts it (tests/k8s/start.sh exports ``ALLOC_K8S_*``); elsewhere it is
started here when its programs are built and cached, and the tests skip,
saying why in one line, where they cannot be built.  Under CI a control plane
that was neither started nor declared impossible is a failure, not a skip.
"""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import controlplane  # noqa: E402
import harness  # noqa: E402


@pytest.fixture(scope="session")
def k8s():
    """The control plane's environment: kubeconfigs of the admin and the scheduler."""
    pytest.importorskip("kubernetes", reason="the kubernetes client is not installed "
                        "(pip install alloc[k8s])")
    got = harness.env()
    if isinstance(got, dict):
        yield got
        return
    if got:
        pytest.skip(got)
    why = controlplane.reason()
    if why:
        pytest.skip(why)
    missing = [n for n in ("etcd", "kube-apiserver") if not controlplane.binary(n).exists()]
    if missing:
        if os.environ.get("CI"):
            pytest.fail("the Kubernetes control plane was neither started nor declared "
                        "impossible (tests/k8s/start.sh)")
        pytest.skip(f"{', '.join(missing)} not built here: tests/k8s/start.sh builds them")
    env = controlplane.start()
    try:
        yield env
    finally:
        controlplane.stop(env["ALLOC_K8S_RUN"])


@pytest.fixture(scope="session")
def admin(k8s):
    """(CoreV1Api, CustomObjectsApi, ApiClient) as the cluster's admin."""
    return harness.clients(k8s["ALLOC_K8S_KUBECONFIG"])


@pytest.fixture
def namespace(admin):
    """A fresh namespace; its pods and the test's nodes go at the end."""
    core = admin[0]
    ns = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    harness.cleanup_nodes(core)
    yield ns
    try:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        core.delete_namespace(ns)
    except Exception:
        pass
    harness.cleanup_nodes(core)
