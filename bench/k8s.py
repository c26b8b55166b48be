"""alloc k8s run against a real kube-apiserver, and kube-scheduler beside it.

The control plane of the tests (``tests/k8s/controlplane.py``: etcd,
kube-apiserver and kube-scheduler built from their Go modules) is started
here; nodes are API objects (no kubelet), and a fake kubelet in this process
runs each bound pod for its duration.  Three parts, each printed as a table
(``--out FILE``: the same, as Markdown):

``cycle``
    ``--cycle-nodes`` nodes (8 GPUs each; two GPU types; zone > block > rack)
    and ``--cycle-pods`` pending pods (1, 2, 4 and 8 GPUs, shared GPUs,
    gangs of 4 one-GPU pods), then one cycle of the scheduler in this process
    (imports warmed when it is made; the list of the cluster before the
    cycle is timed apart).  Reports the cycle's wall time, the API server's
    share (the cycle's own calls and the wall time of its parallel
    bindings) and alloc's (the rest: reading the cache, the session's
    bookkeeping, the round, splitting gangs, decisions).

``compare``
    One node set (``--nodes`` nodes of 8 GPUs, two types, three levels) and one
    pod stream (``--pods`` pods at ``--rate`` pods/s, seed ``--seed``: one-GPU
    pods, 2- and 4-GPU pods, shared-GPU pods, gangs of 2-8 pods of one or two
    GPUs, one in ten of high priority), run through alloc and then through
    kube-scheduler (the default profile; the pods' ``schedulerName`` set to
    the scheduler under test), each a process of its own (``alloc k8s run
    --interval 1`` as the docs' service account), each on fresh nodes.  A gang's pods run only
    when all of them run (as distributed training waits for its peers): a
    gang kube-scheduler binds in part holds its GPUs and never starts.
    Reports pods placed, gangs admitted whole, gangs bound in part for over a
    second, the GPU-seconds that pods of gangs bound in part held before their
    gang was whole (stranded: a gang's pods idle until all of them run), the
    GPUs still held at the end by gangs never made whole, creation-to-binding time (p50,
    p99; the creation time is when the create call returned, the binding time
    when this process's watch saw ``spec.nodeName``), and API calls per pod
    (the scheduler's requests in the API server's audit log over the pods of
    the stream).

``latency``
    ``--latency-pods`` one-GPU pods of 4 s at ``--rate`` pods/s on
    ``--latency-nodes`` nodes (room for all of them: the scheduler's
    responsiveness alone), alloc then kube-scheduler.

    python bench/k8s.py                      # all three parts
    python bench/k8s.py --parts compare --out bench/results/k8s_raw.md
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "k8s"))

import controlplane  # noqa: E402
import harness  # noqa: E402

from alloc.adapters.kubernetes.client import Api  # noqa: E402
from alloc.adapters.kubernetes.scheduler import Scheduler  # noqa: E402

GPU = "nvidia.com/gpu"


def q(xs: list[float], p: float) -> float:
    """The ``p`` quantile, nearest rank."""
    s = sorted(xs)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, int(p * len(s) + 0.999999) - 1))]


# ----------------------------------------------------------------------- cluster

class Cluster:
    """The control plane with the docs' RBAC, the PodGroup CRD and priority classes."""

    def __init__(self, scheduler: bool = True):
        names = ("etcd", "kube-apiserver") + (("kube-scheduler",) if scheduler else ())
        controlplane.build(names)
        self.env = controlplane.start(scheduler=scheduler)
        self.run = Path(self.env["ALLOC_K8S_RUN"])
        self.core, self.custom, self.api = harness.clients(self.env["ALLOC_K8S_KUBECONFIG"])
        import common
        common.rbac(self.api)
        common.podgroup_crd(self.api)
        common.priority_classes(self.api)

    def close(self) -> None:
        controlplane.stop(self.run)

    def nodes(self, n: int) -> None:
        harness.cleanup_nodes(self.core)
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: self.core.create_node(harness.node(
                f"n{i:03d}", product="A100" if i % 2 == 0 else "H100",
                labels={harness.ZONE: f"z{i // 64}", harness.BLOCK: f"b{i // 16}",
                        harness.RACK: f"r{i // 4}"})), range(n)))

    def namespace(self) -> str:
        ns = f"b-{uuid.uuid4().hex[:6]}"
        self.core.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": ns}})
        return ns

    def drop(self, ns: str) -> None:
        try:
            self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            self.core.delete_namespace(ns)
        except Exception:
            pass


# ------------------------------------------------------------------------ stream

def stream(n: int, seed: int) -> list[dict]:
    """The pod stream: dicts of `harness.pod` arguments (gang pods consecutive)."""
    rnd = random.Random(seed)
    out: list[dict] = []
    g = 0
    while len(out) < n:
        x = rnd.random()
        prio = "alloc-high" if rnd.random() < 0.1 else "alloc-low"
        run_s = rnd.uniform(3, 8)
        if x < 0.45:
            out.append(dict(gpus=1, run_s=run_s, priority_class=prio,
                            product=rnd.choice((None, "A100", "H100"))))
        elif x < 0.60:
            out.append(dict(gpus=rnd.choice((2, 4)), run_s=run_s, priority_class=prio))
        elif x < 0.75:
            out.append(dict(gpus=1, milli=rnd.choice((250, 500)), cpu="1", memory="2Gi",
                            run_s=run_s, priority_class=prio))
        else:
            size, per = rnd.randint(2, 8), rnd.choice((1, 1, 2))
            g += 1
            for _ in range(size):
                out.append(dict(gpus=per, group=f"g{g}", min_member=size, run_s=run_s,
                                priority_class=prio))
    return out                  # a gang cut by the count is kept whole


class Watch:
    """This process's view of the namespace: when each pod was bound, where."""

    def __init__(self, core, ns: str):
        self.core, self.ns = core, ns
        self.bound: dict[str, tuple[float, str]] = {}
        self._stop = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        from kubernetes import watch
        rv = json.loads(self.core.list_namespaced_pod(self.ns, _preload_content=False).data)[
            "metadata"]["resourceVersion"]
        while not self._stop.is_set():
            try:
                for ev in watch.Watch().stream(self.core.list_namespaced_pod, self.ns,
                                               resource_version=rv, timeout_seconds=1,
                                               deserialize=False):
                    o = ev["object"]
                    rv = o["metadata"]["resourceVersion"]
                    node = o["spec"].get("nodeName")
                    if node and o["metadata"]["name"] not in self.bound:
                        self.bound[o["metadata"]["name"]] = (time.monotonic(), node)
            except Exception:
                time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()


class GangKubelet(harness.Kubelet):
    """A gang's pods run only once every pod of the gang runs (they wait for their peers)."""

    def __init__(self, core, ns: str):
        super().__init__(core, ns)
        self.groups: dict[str, list[tuple[str, str, float]]] = {}
        self.size: dict[str, int] = {}

    def _see(self, p: dict) -> None:
        meta = p["metadata"]
        group = (meta.get("labels") or {}).get("scheduling.x-k8s.io/pod-group")
        if not group or meta.get("deletionTimestamp") or not p["spec"].get("nodeName") \
                or meta["uid"] in self._seen:
            return super()._see(p)
        self._seen.add(meta["uid"])
        size = int((meta.get("annotations") or {}).get("alloc.io/min-member", "1"))
        run_s = float((meta.get("annotations") or {}).get(harness.RUN_S, "3"))
        members = self.groups.setdefault(group, [])
        members.append((meta["name"], meta["uid"], run_s))
        if len(members) == size:
            with self._lock:
                for name, uid, r in members:
                    harness.heapq.heappush(self._due, (time.monotonic() + r, name, uid))


def run_stream(cl: Cluster, who: str, pods: list[dict], rate: float, nodes: int,
               settle: float, gangs: bool = True) -> dict:
    """One scheduler over the stream; the figures of the compare table."""
    cl.nodes(nodes)
    ns = cl.namespace()
    name = "alloc" if who == "alloc" else "default-scheduler"
    audit0 = controlplane.audit_counts(cl.run)
    proc = None
    if who == "alloc":
        import os
        import subprocess
        log = cl.run / f"alloc-{ns}.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "alloc", "k8s", "run", "--interval", "1",
             "--kubeconfig", cl.env["ALLOC_K8S_SCHEDULER_KUBECONFIG"],
             "--decisions", str(cl.run / f"alloc-{ns}.jsonl")],
            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL,
            stderr=open(log, "w"))
    else:
        controlplane.start_kube_scheduler(cl.run)
    # a probe pod: the stream starts once the scheduler has bound one pod (imports,
    # warm-up and the first list are not part of the figures)
    harness.create(cl.core, ns, harness.pod("probe", scheduler=name, run_s=0.5))
    harness.wait(lambda: (harness.pods(cl.core, ns).get("probe") or {}).get("spec", {})
                 .get("nodeName"), 120, tick=0.2, what=f"{who} to bind a probe pod")
    kube = (GangKubelet if gangs else harness.Kubelet)(cl.core, ns)
    kube.__enter__()
    seen = Watch(cl.core, ns)
    time.sleep(1.0)
    created: dict[str, float] = {}
    groups: dict[str, list[str]] = {}
    t0 = time.monotonic()

    def make(k: int) -> None:
        spec = dict(pods[k])
        pname = f"p{k}"
        if spec.get("group"):
            groups.setdefault(spec["group"], []).append(pname)
        when = t0 + k / rate
        delay = when - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        harness.create(cl.core, ns, harness.pod(pname, scheduler=name, **spec))
        created[pname] = time.monotonic()
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(make, range(len(pods))))
    arrivals_s = time.monotonic() - t0
    time.sleep(settle)
    bound = {k: v for k, v in seen.bound.items() if k != "probe"}
    lat = [bound[p][0] - created[p] for p in bound if p in created]
    end = time.monotonic()
    by_name = {f"p{k}": pods[k] for k in range(len(pods))}
    whole = part = 0
    stranded_s = 0.0          # GPU-seconds held by pods of gangs not whole yet
    held_end = 0              # GPUs held at the end by gangs never made whole
    for m in groups.values():
        got = [p for p in m if p in bound]
        if not got:
            continue
        done_t = max(bound[p][0] for p in got) if len(got) == len(m) else end
        first = min(bound[p][0] for p in got)
        if len(got) == len(m):
            whole += 1
        if done_t - first > 1.0:
            part += 1                      # part-bound for more than a second
        stranded_s += sum(by_name[p]["gpus"] * (done_t - bound[p][0]) for p in got)
        if len(got) < len(m):
            held_end += sum(by_name[p]["gpus"] for p in got)
    seen.stop()
    kube.__exit__()
    cycles: list[float] = []
    if proc is not None:
        proc.terminate()
        proc.wait(20)
        import re
        cycles = [float(m) / 1e3 for m in re.findall(r"\((\d+) ms alloc", log.read_text())]
    else:
        controlplane._kill(cl.run / "kube-scheduler.pid")
    time.sleep(1.5)            # the audit log is written in batches of 1 s
    audit1 = controlplane.audit_counts(cl.run)
    user = controlplane.SCHEDULER_USER if who == "alloc" else controlplane.KUBE_SCHEDULER_USER
    calls = audit1.get(user, 0) - audit0.get(user, 0)
    cl.drop(ns)
    return {"scheduler": who, "pods": len(pods), "placed": len(bound),
            "gangs": len(groups), "gangs_whole": whole, "gangs_part": part,
            "gpus_stranded": held_end, "stranded_gpu_s": stranded_s, "p50_s": q(lat, 0.5), "p99_s": q(lat, 0.99),
            "calls_per_pod": calls / len(pods), "arrivals_s": arrivals_s,
            "cycle_alloc_p50_s": q(cycles, 0.5) if cycles else float("nan"),
            "cycle_alloc_max_s": max(cycles) if cycles else float("nan")}


def part_cycle(cl: Cluster, nodes: int, pods: int, seed: int) -> dict:
    """One cycle over ``pods`` pending pods on ``nodes`` nodes."""
    cl.nodes(nodes)
    ns = cl.namespace()
    rnd = random.Random(seed)
    specs = []
    g = 0
    while len(specs) < pods:
        x = rnd.random()
        if x < 0.6:
            specs.append(dict(gpus=rnd.choice((1, 1, 2, 4, 8))))
        elif x < 0.8:
            specs.append(dict(gpus=1, milli=rnd.choice((250, 500)), cpu="1", memory="2Gi"))
        else:
            g += 1
            specs += [dict(gpus=1, group=f"g{g}", min_member=4) for _ in range(4)]
    specs = specs[:pods]
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda k: harness.create(cl.core, ns, harness.pod(f"c{k}", **specs[k])),
                    range(len(specs))))
    api = Api(cl.env["ALLOC_K8S_SCHEDULER_KUBECONFIG"])
    sched = Scheduler(api, events=True, log=open(cl.run / "alloc.log", "a"))
    t0 = time.perf_counter()
    sched.relist()
    list_s = time.perf_counter() - t0
    c = sched.cycle()
    sched.close()
    t = dict(sched.session.last.timings) if sched.session and sched.session.last else {}
    cl.drop(ns)
    return {"nodes": nodes, "pods": len(specs), "bound": len(c.bound), "jobs": len(c.started),
            "list_s": list_s, "wall_s": c.wall_s, "api_s": c.api_s, "alloc_s": c.alloc_s,
            "round_s": c.round_s, "solve_s": t.get("solve_s", 0.0), "api_calls": c.api_calls,
            "cpu_s": c.cpu_s}


def table(rows: list[dict], cols: list[tuple[str, str, str]]) -> str:
    """A Markdown table: (key, header, format)."""
    head = "| " + " | ".join(h for _, h, _ in cols) + " |"
    sep = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(format(r[k], f) if f else str(r[k]) for k, _, f in cols) + " |"
            for r in rows]
    return "\n".join([head, sep, *body])


def main(argv=None) -> int:
    """Run the parts asked for (module notes); prints the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="cycle,compare,latency",
                    help="comma-separated: cycle, compare, latency (default: all)")
    ap.add_argument("--nodes", type=int, default=16, help="compare: nodes (default: 16)")
    ap.add_argument("--pods", type=int, default=300, help="compare: pods (default: 300)")
    ap.add_argument("--rate", type=float, default=50.0, help="arrivals, pods/s (default: 50)")
    ap.add_argument("--settle", type=float, default=30.0,
                    help="compare: seconds after the last arrival before counting (default: 30)")
    ap.add_argument("--seed", type=int, default=1, help="stream seed (default: 1)")
    ap.add_argument("--cycle-nodes", type=int, default=500, help="cycle: nodes (default: 500)")
    ap.add_argument("--cycle-pods", type=int, default=1000, help="cycle: pods (default: 1000)")
    ap.add_argument("--cycle-repeats", type=int, default=3, help="cycle: repeats (default: 3)")
    ap.add_argument("--latency-nodes", type=int, default=64, help="latency: nodes (default: 64)")
    ap.add_argument("--latency-pods", type=int, default=1000,
                    help="latency: pods (default: 1000)")
    ap.add_argument("--schedulers", default="alloc,kube-scheduler",
                    help="compare, latency: which schedulers (default: alloc,kube-scheduler)")
    ap.add_argument("--logs", default=None, metavar="DIR",
                    help="copy alloc's logs and decisions here before the control plane goes")
    ap.add_argument("--out", default=None, help="also write the tables here (Markdown)")
    args = ap.parse_args(argv)
    parts = args.parts.split(",")
    why = controlplane.reason()
    if why:
        print(f"no control plane here: {why}", file=sys.stderr)
        return 2
    import os
    lines = [f"load before: {os.getloadavg()[0]:.2f} (1-min average), {os.cpu_count()} cores"]
    cl = Cluster(scheduler="compare" in parts or "latency" in parts)
    try:
        if "cycle" in parts:
            rows = [part_cycle(cl, args.cycle_nodes, args.cycle_pods, args.seed + k)
                    for k in range(args.cycle_repeats)]
            lines += ["", "### One cycle", "", table(rows, [
                ("nodes", "nodes", ""), ("pods", "pending pods", ""), ("jobs", "jobs started", ""),
                ("bound", "pods bound", ""), ("list_s", "list before (s)", ".3f"),
                ("wall_s", "cycle wall (s)", ".3f"), ("api_s", "API server's share (s)", ".3f"),
                ("alloc_s", "alloc's own (s)", ".3f"), ("round_s", "of which the round (s)", ".3f"),
                ("cpu_s", "alloc's own CPU (s)", ".3f"),
                ("api_calls", "calls in the cycle", "")]),
                "", f"median of alloc's own time: {statistics.median(r['alloc_s'] for r in rows):.3f} s "
                    f"(CPU: {statistics.median(r['cpu_s'] for r in rows):.3f} s)"]
            print("\n".join(lines[-6:]), flush=True)
        if "compare" in parts:
            pods = stream(args.pods, args.seed)
            rows = [run_stream(cl, who, pods, args.rate, args.nodes, args.settle)
                    for who in args.schedulers.split(",")]
            lines += ["", f"### Same nodes, same stream ({len(pods)} pods at {args.rate:g} pods/s, "
                          f"{args.nodes} nodes of 8 GPUs, seed {args.seed})", "", table(rows, [
                ("scheduler", "scheduler", ""), ("placed", "pods placed", ""),
                ("gangs", "gangs", ""), ("gangs_whole", "gangs admitted whole", ""),
                ("gangs_part", "gangs bound in part for over 1 s", ""),
                ("stranded_gpu_s", "GPU-seconds held by gangs bound in part", ".0f"),
                ("gpus_stranded", "GPUs held at the end by gangs never whole", ""),
                ("p50_s", "creation to binding p50 (s)", ".3f"),
                ("p99_s", "p99 (s)", ".3f"), ("calls_per_pod", "API calls per pod", ".2f")])]
            print("\n".join(lines[-3:]), flush=True)
        if "latency" in parts:
            pods = [dict(gpus=1, run_s=4.0) for _ in range(args.latency_pods)]
            rows = [run_stream(cl, who, pods, args.rate, args.latency_nodes, 8.0, gangs=False)
                    for who in args.schedulers.split(",")]
            lines += ["", f"### Creation to binding at {args.rate:g} pods/s "
                          f"({len(pods)} one-GPU pods, {args.latency_nodes} nodes)", "",
                      table(rows, [("scheduler", "scheduler", ""), ("placed", "pods placed", ""),
                                   ("arrivals_s", "arrivals took (s)", ".1f"),
                                   ("p50_s", "p50 (s)", ".3f"), ("p99_s", "p99 (s)", ".3f"),
                                   ("calls_per_pod", "API calls per pod", ".2f"),
                                   ("cycle_alloc_p50_s", "alloc's own time per cycle p50 (s)",
                                    ".3f"),
                                   ("cycle_alloc_max_s", "max (s)", ".3f")])]
            print("\n".join(lines[-3:]), flush=True)
    finally:
        if args.logs:
            import shutil
            Path(args.logs).mkdir(parents=True, exist_ok=True)
            for f in list(cl.run.glob("alloc-*")) + list(cl.run.glob("kube-scheduler.log")):
                shutil.copy(f, args.logs)
        cl.close()
    lines.append(f"load after: {os.getloadavg()[0]:.2f}")
    print(lines[-1])
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
