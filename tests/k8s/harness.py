"""Around a real kube-apiserver in the tests: fake nodes, pods, a fake kubelet, a recorder.

No kubelet runs: nodes are API objects with capacity and labels (as KWOK
makes them), and `Kubelet` plays the nodes' part: a bound pod becomes
Running, then Succeeded after its ``test.alloc.io/run-s`` seconds; a pod
being deleted is removed (grace period 0) as a kubelet would once its
containers stopped.  `Recorder` watches every pod and keeps what the tests
check: each pod's first node, the deletions, the node usage at every change.
"""
from __future__ import annotations

import heapq
import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path

RUN_S = "test.alloc.io/run-s"
GPU = "nvidia.com/gpu"
PRODUCT = "nvidia.com/gpu.product"
ZONE, BLOCK, RACK = ("topology.kubernetes.io/zone", "cloud.provider.com/topology-block",
                     "cloud.provider.com/topology-rack")
HERE = Path(__file__).resolve().parent


def env() -> dict[str, str] | str:
    """The started control plane's environment, or why the tests skip (one line)."""
    if os.environ.get("ALLOC_K8S_KUBECONFIG"):
        return {k: v for k, v in os.environ.items() if k.startswith("ALLOC_K8S_")}
    if os.environ.get("ALLOC_K8S_SKIP"):
        return os.environ["ALLOC_K8S_SKIP"]
    return ""


def clients(kubeconfig: str):
    """(CoreV1Api, CustomObjectsApi, ApiClient) for a kubeconfig."""
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=kubeconfig)
    return client.CoreV1Api(api), client.CustomObjectsApi(api), api


def node(name: str, *, gpus: int = 8, product: str = "A100", cpu: str = "64",
         memory: str = "512Gi", labels: dict | None = None) -> dict:
    """A Node object, Ready, with allocatable CPU, memory and GPUs."""
    cap = {"cpu": cpu, "memory": memory, "pods": "110", GPU: str(gpus)}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, PRODUCT: product,
                                              "test.alloc.io/node": "1", **(labels or {})}},
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastHeartbeatTime": None, "lastTransitionTime": None}]},
    }


def pod(name: str, *, gpus: int = 1, cpu: str = "2", memory: str = "8Gi", milli: int | None = None,
        product: str | None = None, group: str | None = None, min_member: int | None = None,
        priority_class: str | None = None, required: str | None = None,
        preferred: str | None = None, run_s: float = 3.0, scheduler: str = "alloc",
        annotations: dict | None = None) -> dict:
    """A pod for the scheduler (one container, requests = limits)."""
    res = {"cpu": cpu, "memory": memory}
    if gpus and milli is None:
        res[GPU] = str(gpus)
    ann = {RUN_S: str(run_s), **(annotations or {})}
    if milli is not None:
        ann["alloc.io/gpu-milli"] = str(milli)
    if min_member is not None:
        ann["alloc.io/min-member"] = str(min_member)
    if required:
        ann["kueue.x-k8s.io/podset-required-topology"] = required
    if preferred:
        ann["kueue.x-k8s.io/podset-preferred-topology"] = preferred
    spec: dict = {"schedulerName": scheduler, "terminationGracePeriodSeconds": 5,
                  "containers": [{"name": "main", "image": "busybox",
                                  "resources": {"requests": res, "limits": res}}]}
    if product:
        spec["nodeSelector"] = {PRODUCT: product}
    if priority_class:
        spec["priorityClassName"] = priority_class
    labels = {"test.alloc.io/pod": "1"}
    if group:
        labels["scheduling.x-k8s.io/pod-group"] = group
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": ann}, "spec": spec}


def create(core, namespace: str, obj: dict) -> dict:
    """Create a pod (the JSON back)."""
    r = core.create_namespaced_pod(namespace, obj, _preload_content=False)
    return json.loads(r.data)


def cleanup_nodes(core) -> None:
    for n in json.loads(core.list_node(label_selector="test.alloc.io/node",
                                       _preload_content=False).data)["items"]:
        try:
            core.delete_node(n["metadata"]["name"])
        except Exception:
            pass


def pods(core, namespace: str) -> dict[str, dict]:
    """The namespace's pods by name."""
    out = json.loads(core.list_namespaced_pod(namespace, _preload_content=False).data)
    return {p["metadata"]["name"]: p for p in out["items"]}


class Kubelet:
    """Plays every node's kubelet for the pods of one namespace (see the module notes).

    Event-driven: it watches the namespace's pods; a bound pod is marked
    Succeeded ``test.alloc.io/run-s`` seconds after its binding was seen (one
    status update per pod, from a small pool of threads); a pod being
    deleted is removed with grace period 0.
    """

    def __init__(self, core, namespace: str, tick: float = 0.05):
        self.core, self.ns, self.tick = core, namespace, tick
        self._stop = threading.Event()
        self._due: list[tuple[float, str, str]] = []      # (time, name, uid)
        self._seen: set[str] = set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.timer = threading.Thread(target=self._timers, daemon=True)
        self._lock = threading.Lock()
        from concurrent.futures import ThreadPoolExecutor
        self._pool = ThreadPoolExecutor(4)

    def __enter__(self) -> "Kubelet":
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.thread.join(10)
        self.timer.join(10)
        self._pool.shutdown(wait=True)

    def _run(self) -> None:
        from kubernetes import watch
        rv = None
        while not self._stop.is_set():
            try:
                if rv is None:
                    out = json.loads(self.core.list_namespaced_pod(self.ns,
                                                                   _preload_content=False).data)
                    rv = out["metadata"]["resourceVersion"]
                    for p in out["items"]:
                        self._see(p)
                w = watch.Watch()
                for ev in w.stream(self.core.list_namespaced_pod, self.ns, resource_version=rv,
                                   timeout_seconds=1, deserialize=False):
                    rv = ev["object"]["metadata"]["resourceVersion"]
                    if ev["type"] != "DELETED":
                        self._see(ev["object"])
                    if self._stop.is_set():
                        return
            except Exception:
                rv = None
                time.sleep(0.1)

    def _see(self, p: dict) -> None:
        meta, spec, status = p["metadata"], p["spec"], p.get("status") or {}
        name, uid = meta["name"], meta["uid"]
        if meta.get("deletionTimestamp"):
            self._pool.submit(self._remove, name)
            return
        if not spec.get("nodeName") or uid in self._seen:
            return
        if status.get("phase") in ("Succeeded", "Failed"):
            return
        self._seen.add(uid)
        run_s = float((meta.get("annotations") or {}).get(RUN_S, "3"))
        with self._lock:
            heapq.heappush(self._due, (time.monotonic() + run_s, name, uid))

    def _timers(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            due = []
            with self._lock:
                while self._due and self._due[0][0] <= now:
                    due.append(heapq.heappop(self._due))
            for _, name, uid in due:
                self._pool.submit(self._phase, name, "Succeeded", uid)
            self._stop.wait(self.tick)

    def _remove(self, name: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, self.ns, grace_period_seconds=0)
        except Exception:
            pass

    def _phase(self, name: str, phase: str, uid: str | None = None) -> None:
        body: dict = {"status": {"phase": phase}}
        if uid is not None:
            body["metadata"] = {"uid": uid}
        try:
            self.core.patch_namespaced_pod_status(name, self.ns, body)
        except Exception:
            pass


class Recorder:
    """Watches the namespace's pods and the nodes; keeps what the tests check."""

    def __init__(self, core, namespace: str):
        self.core, self.ns = core, namespace
        self.first_node: dict[str, str] = {}
        self.bind_time: dict[str, float] = {}
        self.created: dict[str, float] = {}
        self.bindings: dict[str, set] = defaultdict(set)    # pod -> nodes seen (must be one)
        self.deleted: set[str] = set()
        self.deleting: set[str] = set()
        self.ended: set[str] = set()
        self.overcommit: list[str] = []
        self.live: dict[str, dict] = {}
        self.nodes: dict[str, dict] = {}
        self.gpu_slots: list[str] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Recorder":
        self.thread.start()
        time.sleep(0.3)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        from kubernetes import watch
        w = watch.Watch()
        rv = json.loads(self.core.list_namespaced_pod(self.ns, _preload_content=False).data)[
            "metadata"]["resourceVersion"]
        while not self._stop.is_set():
            try:
                for ev in w.stream(self.core.list_namespaced_pod, self.ns, resource_version=rv,
                                   timeout_seconds=1, deserialize=False):
                    obj = ev["object"]
                    rv = obj["metadata"]["resourceVersion"]
                    self._see(ev["type"], obj)
            except Exception:
                time.sleep(0.1)

    def _see(self, etype: str, p: dict) -> None:
        name = p["metadata"]["name"]
        now = time.monotonic()
        self.created.setdefault(name, now)
        node = p["spec"].get("nodeName")
        if node:
            self.bindings[name].add(node)
            if name not in self.first_node:
                self.first_node[name] = node
                self.bind_time[name] = now
        if p["metadata"].get("deletionTimestamp"):
            self.deleting.add(name)
        if etype == "DELETED":
            self.deleted.add(name)
            self.live.pop(name, None)
        elif (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.ended.add(name)
            self.live.pop(name, None)
        elif node:
            self.live[name] = p
        self._check()

    def _check(self) -> None:
        """No node's GPUs, CPU or memory over-committed by the live pods."""
        from alloc.adapters.kubernetes.quantity import mib, milli_cpu
        if not self.nodes:
            for n in json.loads(self.core.list_node(_preload_content=False).data)["items"]:
                self.nodes[n["metadata"]["name"]] = n["status"]["allocatable"]
        use: dict[str, list] = defaultdict(lambda: [0, 0, 0])
        milli: dict[tuple, int] = defaultdict(int)
        for name, p in self.live.items():
            n = p["spec"]["nodeName"]
            res = p["spec"]["containers"][0]["resources"]["requests"]
            use[n][0] += milli_cpu(res.get("cpu", "0"))
            use[n][1] += mib(res.get("memory", "0"))
            use[n][2] += int(res.get(GPU, "0"))
            ann = p["metadata"].get("annotations") or {}
            share = int(ann.get("alloc.io/gpu-milli", "1000"))
            for k in (ann.get("alloc.io/gpus") or "").split(","):
                if k:
                    milli[(n, int(k))] += share
        for n, (c, m, g) in use.items():
            a = self.nodes.get(n)
            if a is None:
                continue
            if c > milli_cpu(a["cpu"]) or m > mib(a["memory"], capacity=True) or g > int(a[GPU]):
                self.overcommit.append(f"{n}: cpu {c} mem {m} gpus {g} over {a}")
        for (n, k), v in milli.items():
            if v > 1000:
                self.overcommit.append(f"{n}/gpu{k}: {v} milli")


def wait(pred, timeout: float, tick: float = 0.1, what: str = "condition") -> None:
    """Wait until ``pred()`` is true, or fail naming ``what``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(tick)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def decisions(path: Path) -> list[dict]:
    """The JSON lines of a decisions file."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
