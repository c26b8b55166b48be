"""What the Kubernetes tests share: the docs' manifests applied, the scheduler as a process."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "kubernetes.md"


def manifests() -> list[dict]:
    """The YAML documents of docs/kubernetes.md's yaml blocks, in order."""
    import yaml
    text = DOCS.read_text()
    out = []
    for block in re.findall(r"^```yaml\n(.*?)^```", text, re.M | re.S):
        out += [d for d in yaml.safe_load_all(block) if d]
    return out


def apply(api_client, doc: dict) -> None:
    """Create the object, or replace it when it exists (as `kubectl apply` would)."""
    from kubernetes import utils
    from kubernetes.client.rest import ApiException
    try:
        utils.create_from_dict(api_client, doc)
    except utils.FailToCreateError as exc:
        if not all(isinstance(e, ApiException) and e.status == 409 for e in exc.api_exceptions):
            raise


def rbac(api_client) -> None:
    """The docs' ServiceAccount, ClusterRole and ClusterRoleBinding (the scheduler's rights)."""
    for d in manifests():
        if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
            apply(api_client, d)


def podgroup_crd(api_client) -> None:
    """The PodGroup CRD, established."""
    import yaml
    from kubernetes import client
    doc = yaml.safe_load((Path(__file__).parent / "podgroup-crd.yaml").read_text())
    apply(api_client, doc)
    ext = client.ApiextensionsV1Api(api_client)

    def established() -> bool:
        crd = ext.read_custom_resource_definition(doc["metadata"]["name"])
        return any(c.type == "Established" and c.status == "True"
                   for c in (crd.status.conditions or ()))
    harness.wait(established, 30, what="the PodGroup CRD")


def priority_classes(api_client) -> None:
    for name, value in (("alloc-low", 0), ("alloc-high", 1000)):
        apply(api_client, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value})


class SchedulerProcess:
    """``python -m alloc k8s run --interval S`` as the scheduler's service account."""

    def __init__(self, k8s: dict, decisions: Path, log: Path, *extra: str, interval: float = 0.5):
        self.args = [sys.executable, "-m", "alloc", "k8s", "run", "--interval", str(interval),
                     "--kubeconfig", k8s["ALLOC_K8S_SCHEDULER_KUBECONFIG"],
                     "--decisions", str(decisions), *extra]
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> "SchedulerProcess":
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(self.args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "a"))
        return self

    def kill(self) -> None:
        """Stop it at once (as a crash would)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> "SchedulerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def events(core, namespace: str) -> list[dict]:
    """The namespace's Events (JSON)."""
    r = core.list_namespaced_event(namespace, _preload_content=False)
    return json.loads(r.data)["items"]


def pod_events(core, namespace: str, reason: str | None = None) -> dict[str, list[dict]]:
    """Events by the pod they are on (those of ``reason`` only)."""
    out: dict[str, list[dict]] = {}
    for e in events(core, namespace):
        if reason is None or e.get("reason") == reason:
            out.setdefault(e["involvedObject"]["name"], []).append(e)
    return out


def quantile(xs: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))] if s else float("nan")


def settle(s: float) -> None:
    time.sleep(s)
