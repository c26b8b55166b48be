"""Reproduce the Tiresias testbed experiment (Gu et al., NSDI'19, §5.2) in
simulation: 480 jobs on 15 servers x 4 GPUs, from a trace in the artifact's
CSV format (``job_id,num_gpu,submit_time,iterations,model_name,duration,
interval``), against the figures the artifact's simulator gives on it.

    python bench/tiresias.py --trace ../shared/data/tiresias/t480_yarn_s0.csv \\
        --servers 15 --gpus-per-server 4 --policy tiresias-l --out l.json
    python bench/tiresias.py --trace T.csv --policy all          # the six, a table with FOIs
    python bench/tiresias.py --trace T.csv --policy all --artifact DIR   # and the artifact

``--out FILE`` writes ``{"avg_jct_s", "median_jct_s", "p95_jct_s",
"makespan_s", "preemptions", "wall_s"}`` (``--policy all``: one such
object per policy).  Every run goes through the one simulator
(`alloc.sim.simulate`, event-driven: a decision at every arrival and
completion, and at each threshold crossing of a running job).

The stacks, fixed from the paper and the artifact before any run:

==============  =============================  ==========================  ==========
policy          order                          placement                   artifact
==============  =============================  ==========================  ==========
yarn-cs         ``yarn-cs`` (FIFO, no preempt)  ``yarn`` (strict)           fifo:yarn
best-effort     ``best-effort`` (FIFO)          ``yarn`` (``skip``)         fjf:yarn
srtf            ``srtf``                        ``tiresias`` (counting)     shortest:count
srsf            ``srsf``                        ``tiresias`` (counting)     shortest-gpu:count
tiresias-l      ``tiresias-l`` (K, threshold)   ``tiresias`` (counting)     dlas-gpu:count
tiresias-g      ``tiresias-g`` (K, threshold)   ``tiresias`` (counting)     dlas-gpu-gittins:count
==============  =============================  ==========================  ==========

The preemptive policies take, at each decision, the ranked jobs whose GPUs
fit the cluster's, skipping those that do not (the artifact's greedy walk);
YARN-CS and Best-effort offer every job to the placement, which stops at
(or skips) the first it cannot consolidate.  ``--placement profile``
instead gives the preemptive policies Tiresias' profile-based placement
(the VGG family and AlexNet consolidated, Table 6), and ``--restart-s``
charges a delay per restart (the artifact charges none; 62.1 s is the
testbed's mean, §5.2.4).  Tiresias-G's service distribution is the GPU-time
(GPUs x duration) of the trace's jobs as they arrive (``--samples CSV``
gives another).  Job completion time is finish less submission; the
percentiles interpolate linearly.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from alloc import Cluster, Server  # noqa: E402
from alloc.errors import InputError  # noqa: E402
from alloc.sched.tiresias.models import PACKLIMIT, consolidate  # noqa: E402
from alloc.sched.tiresias.progress import TiresiasProgress  # noqa: E402
from alloc.sched.tiresias.trace import read_trace  # noqa: E402
from alloc.sim import WorkloadJob, simulate  # noqa: E402

POLICIES = ("yarn-cs", "best-effort", "srtf", "srsf", "tiresias-l", "tiresias-g")
#: The artifact's mode of each policy (schedule:placement).
ARTIFACT_MODE = {"yarn-cs": "fifo:yarn", "best-effort": "fjf:yarn", "srtf": "shortest:count",
                 "srsf": "shortest-gpu:count", "tiresias-l": "dlas-gpu:count",
                 "tiresias-g": "dlas-gpu-gittins:count"}
#: The artifact on ../shared/data/tiresias/t480_yarn_s0.csv (15 x 4 GPUs, K = 2,
#: 3,200 GPU-s), as the protocol (shared/protocols/index_systems.md) records it.
ARTIFACT_T480 = {
    "yarn-cs": {"avg_jct_s": 10228, "median_jct_s": 10864, "p95_jct_s": 19812,
                "makespan_s": 38558, "preemptions": 0},
    "best-effort": {"avg_jct_s": 3453, "median_jct_s": 856, "p95_jct_s": 18412,
                    "makespan_s": 36339, "preemptions": 0},
    "srtf": {"avg_jct_s": 2024, "median_jct_s": 553, "p95_jct_s": 12383,
             "makespan_s": 34285, "preemptions": 736},
    "srsf": {"avg_jct_s": 1832, "median_jct_s": 550, "p95_jct_s": 11758,
             "makespan_s": 36116, "preemptions": 289},
    "tiresias-l": {"avg_jct_s": 3499, "median_jct_s": 568, "p95_jct_s": 16564,
                   "makespan_s": 34624, "preemptions": 330},
    "tiresias-g": {"avg_jct_s": 3001, "median_jct_s": 566, "p95_jct_s": 18479,
                   "makespan_s": 33637, "preemptions": 1637},
}
KEYS = ("avg_jct_s", "median_jct_s", "p95_jct_s", "makespan_s", "preemptions")


def cluster(servers: int, gpus: int) -> Cluster:
    """``servers`` identical servers of ``gpus`` GPUs (128 cores, 256 GiB: the
    artifact's node spec; jobs get a GPU-proportional share, never binding)."""
    return Cluster(tuple(Server(f"n{i:03d}", cpu=128000, mem=262144, gpus=gpus)
                         for i in range(servers)))


def workload(path: str) -> list[WorkloadJob]:
    """The trace as the simulator's jobs (iterations kept as an extra column)."""
    out = []
    for j in read_trace(path):
        out.append(WorkloadJob(j.id, j.arrival_s, j.gpus, duration_s=j.duration_s,
                               model=j.model or None,
                               extra={"iterations": j.iterations} if j.iterations else {}))
    return out


def stack(policy: str, jobs: list[WorkloadJob], *, queues: int = 2, threshold: float = 3200.0,
          placement: str = "artifact", samples: str = "",
          promote_knob: float | None = None, fifo: str = "queue",
          last_queue: str = "index") -> dict:
    """The simulator's keyword arguments for one policy (see the module notes)."""
    if policy in ("yarn-cs", "best-effort"):
        return {"order": policy, "placement": ("yarn", {"skip": policy == "best-effort"}),
                "candidates": "all"}
    if placement == "profile":
        skewed = [j.id for j in jobs if consolidate(j.model)]
        place = ("tiresias", {"packlimit": PACKLIMIT, "skewed": skewed})
    else:
        place = ("tiresias", {"packlimit": 1.0})
    q = {"queues": queues, "threshold": threshold, "promote_knob": promote_knob, "fifo": fifo}
    order: object = {"srtf": "srtf", "srsf": "srsf",
                     "tiresias-l": ("tiresias-l", q),
                     "tiresias-g": ("tiresias-g", {**q, "samples": samples,
                                                   "last_queue": last_queue})}[policy]
    return {"order": order, "placement": place, "candidates": "fit"}


def figures(res, wall: float) -> dict:
    """The bench's figures from a run (``jct`` holds the sorted JCTs, for plots)."""
    jct = sorted(res.jct().values())
    s = res.summary()
    return {"avg_jct_s": float(np.mean(jct)), "median_jct_s": float(np.percentile(jct, 50)),
            "p95_jct_s": float(np.percentile(jct, 95)), "makespan_s": float(s["makespan_s"]),
            "preemptions": int(s["preemptions"]), "wall_s": round(wall, 3),
            "jobs": len(jct), "restarts": int(s.get("restarts", 0)), "jct": jct}


def plot(ours: dict, peer: dict | None, path: str) -> None:
    """JCT CDFs of the policies and their FOIs over Tiresias-L beside the
    artifact's (matplotlib, the plot extra)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for p, f in ours.items():
        y = np.arange(1, len(f["jct"]) + 1) / len(f["jct"])
        ax[0].plot(f["jct"], y, label=p, lw=1.2)
    ax[0].set_xscale("log")
    ax[0].set_xlabel("JCT (s)")
    ax[0].set_ylabel("fraction of jobs")
    ax[0].legend(fontsize=8)
    ax[0].set_title("JCT CDF (alloc)")
    names = [p for p in ours if p != "tiresias-l"]
    xs = np.arange(len(names))
    fo = foi(ours)
    ax[1].bar(xs - 0.2, [fo[p] for p in names], 0.4, label="alloc")
    if peer:
        fp = foi(peer)
        ax[1].bar(xs + 0.2, [fp[p] for p in names], 0.4, label="artifact")
    ax[1].axhline(1.0, color="k", lw=0.8)
    ax[1].set_xticks(xs)
    ax[1].set_xticklabels(names, fontsize=8)
    ax[1].set_yscale("log")
    ax[1].set_ylabel("avg JCT / Tiresias-L's")
    ax[1].legend(fontsize=8)
    ax[1].set_title("factor of improvement of Tiresias-L")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run(policy: str, trace: str, servers: int = 15, gpus_per_server: int = 4, *,
        queues: int = 2, threshold: float = 3200.0, placement: str = "artifact",
        restart_s: float = 0.0, samples: str = "", promote_knob: float | None = None,
        fifo: str = "queue", last_queue: str = "index") -> dict:
    """One policy on one trace: the bench's figures."""
    t0 = time.perf_counter()
    jobs = workload(trace)
    kw = stack(policy, jobs, queues=queues, threshold=threshold, placement=placement,
               samples=samples, promote_knob=promote_knob, fifo=fifo, last_queue=last_queue)
    prog = TiresiasProgress(restart_s=restart_s,
                            packlimit=PACKLIMIT if placement == "profile" else 1.0,
                            server_gpus=gpus_per_server)
    res = simulate(cluster(servers, gpus_per_server), jobs, progress=prog,
                   name=f"tiresias-{policy}", **kw)
    return figures(res, time.perf_counter() - t0)


# ----------------------------------------------------------------- artifact
def artifact(policy: str, trace: str, directory: str, servers: int, gpus: int, queues: int,
             threshold: float) -> dict | None:
    """Run the artifact's simulator (python2.7) on the trace in a scratch copy
    with K = ``queues`` and the threshold set; None when python2 is missing."""
    py2 = shutil.which("python2.7") or shutil.which("python2")
    if py2 is None:
        return None
    sched, place = ARTIFACT_MODE[policy].split(":")
    with tempfile.TemporaryDirectory() as tmp:
        sim = Path(tmp) / "sim"
        shutil.copytree(Path(directory) / "simulator", sim)
        jobs_py = sim / "jobs.py"
        text = jobs_py.read_text()
        limits = [threshold * 2 ** k for k in range(queues - 1)] or [threshold]
        text = text.replace("self.num_queue = 3", f"self.num_queue = {queues}")
        text = text.replace("self.queue_limit = [3250, 7200, 18000]",
                            f"self.queue_limit = {[int(x) for x in limits]}")
        jobs_py.write_text(text)
        (sim / "numpy.py").write_text("def mean(x):\n    return sum(x) / float(len(x))\n")
        (sim / "spec.csv").write_text("num_switch,num_node_p_switch,num_gpu_p_node,"
                                      f"num_cpu_p_node,mem_p_node\n1,{servers},{gpus},128,256\n")
        env = dict(os.environ, PYENV_VERSION="2.7.18")
        t0 = time.perf_counter()
        subprocess.run([py2, "run_sim.py", "--cluster_spec=spec.csv", f"--scheme={place}",
                        f"--trace_file={Path(trace).resolve()}", f"--schedule={sched}",
                        "--log_path=out"], cwd=sim, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        with open(sim / "out" / "job.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
    jct = sorted(float(r["JCT"]) for r in rows)
    return {"avg_jct_s": float(np.mean(jct)), "median_jct_s": float(np.percentile(jct, 50)),
            "p95_jct_s": float(np.percentile(jct, 95)),
            "makespan_s": float(max(float(r["end_time"]) for r in rows)),
            "preemptions": sum(int(r["preempt"]) for r in rows), "wall_s": round(wall, 3),
            "jobs": len(jct)}


def foi(figs: dict, key: str = "avg_jct_s") -> dict:
    """Each policy's value over Tiresias-L's."""
    base = figs["tiresias-l"][key]
    return {p: f[key] / base for p, f in figs.items()}


def table(ours: dict, peer: dict | None, peer_name: str) -> str:
    """A Markdown table: our figures, the peer's, and both FOIs."""
    fo, fp = foi(ours), (foi(peer) if peer else None)
    lines = ["| policy | avg JCT s | median s | p95 s | makespan s | preemptions | FOI avg | "
             f"{peer_name} avg | {peer_name} FOI | avg / {peer_name} | FOI / {peer_name} |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in ours:
        f = ours[p]
        row = [p, f"{f['avg_jct_s']:.0f}", f"{f['median_jct_s']:.0f}", f"{f['p95_jct_s']:.0f}",
               f"{f['makespan_s']:.0f}", str(f["preemptions"]), f"{fo[p]:.2f}"]
        if peer and fp is not None and p in peer:
            row += [f"{peer[p]['avg_jct_s']:.0f}", f"{fp[p]:.2f}",
                    f"{f['avg_jct_s'] / peer[p]['avg_jct_s']:.3f}", f"{fo[p] / fp[p]:.3f}"]
        else:
            row += ["", "", "", ""]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True, help="the trace (the artifact's CSV format)")
    ap.add_argument("--servers", type=int, default=15, help="servers (default 15)")
    ap.add_argument("--gpus-per-server", type=int, default=4, help="GPUs per server (default 4)")
    ap.add_argument("--policy", default="tiresias-l", choices=POLICIES + ("all",),
                    help="the policy, or all six (default tiresias-l)")
    ap.add_argument("--queues", type=int, default=2, help="K, Tiresias' queues (default 2)")
    ap.add_argument("--threshold", type=float, default=3200.0,
                    help="the first queue's threshold, GPU-seconds (default 3200)")
    ap.add_argument("--placement", choices=("artifact", "profile"), default="artifact",
                    help="placement of the preemptive policies: the artifact's GPU counting, or "
                         "Tiresias' profile-based consolidation (default artifact)")
    ap.add_argument("--restart-s", type=float, default=0.0,
                    help="seconds without progress at each restart (default 0, the artifact's)")
    ap.add_argument("--promote-knob", type=float, default=None,
                    help="Tiresias' PROMOTEKNOB (default: no promotion, as the testbed)")
    ap.add_argument("--fifo", choices=("queue", "start"), default="queue",
                    help="Tiresias' order within a queue: the authors' simulator's (default) or "
                         "the paper's text, FIFO on first start time")
    ap.add_argument("--last-queue", choices=("index", "fifo"), default="index",
                    help="Tiresias-G's last queue: by Gittins index (the authors' simulator, "
                         "default) or FIFO (the paper's text)")
    ap.add_argument("--samples", default="",
                    help="Tiresias-G's service samples (CSV; default: the trace's GPU-time)")
    ap.add_argument("--artifact", default="",
                    help="a checkout of SymbioticLab/Tiresias: also run its simulator (python2.7)")
    ap.add_argument("--out", default="", help="write the figures (JSON) here")
    ap.add_argument("--plot", default="",
                    help="with --policy all: JCT CDFs and FOIs (PNG; matplotlib) here")
    args = ap.parse_args(argv)
    if args.servers < 1 or args.gpus_per_server < 1 or args.queues < 1:
        print("tiresias: --servers, --gpus-per-server and --queues: expected integers >= 1",
              file=sys.stderr)
        return 2
    if args.restart_s < 0 or not math.isfinite(args.restart_s):
        print(f"tiresias: --restart-s: expected seconds >= 0, got {args.restart_s}",
              file=sys.stderr)
        return 2
    names = POLICIES if args.policy == "all" else (args.policy,)
    try:
        ours = {p: run(p, args.trace, args.servers, args.gpus_per_server, queues=args.queues,
                       threshold=args.threshold, placement=args.placement,
                       restart_s=args.restart_s, samples=args.samples,
                       promote_knob=args.promote_knob, fifo=args.fifo,
                       last_queue=args.last_queue) for p in names}
    except InputError as exc:
        print(f"tiresias: {exc}", file=sys.stderr)
        return 2
    peer = None
    if args.artifact:
        peer = {p: artifact(p, args.trace, args.artifact, args.servers, args.gpus_per_server,
                            args.queues, args.threshold) for p in names}
        if any(v is None for v in peer.values()):
            print("tiresias: python2.7 not found: the artifact was not run", file=sys.stderr)
            peer = None
    for p, f in ours.items():
        print(f"{p:12s} avg {f['avg_jct_s']:8.0f}  median {f['median_jct_s']:7.0f}  p95 "
              f"{f['p95_jct_s']:7.0f}  makespan {f['makespan_s']:7.0f}  preemptions "
              f"{f['preemptions']:5d}  wall {f['wall_s']:.2f} s", file=sys.stderr)
    if args.policy == "all":
        print(table(ours, peer, "artifact") if peer else table(ours, None, "artifact"))
        if args.plot:
            try:
                plot(ours, peer, args.plot)
            except ImportError:
                print("tiresias: --plot needs matplotlib (the plot extra)", file=sys.stderr)
                return 2
    for f in ours.values():
        del f["jct"]
    if args.out:
        out = ours if args.policy == "all" else ours[args.policy]
        if peer:
            out = {"alloc": ours, "artifact": peer}
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
