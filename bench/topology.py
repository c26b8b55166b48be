"""Topology-aware placement on the operator's graph: alloc's solvers against
the placement rules deployed schedulers use, and the topology figures.

``--compare`` (the table of ``bench/results/topology.md``): one round on
generated clusters, every solver on the same input.

Clusters (fixed before any result was seen):

* ``two-level``: 32 racks x 8 servers x 8 GPUs (2,048 GPUs); levels
  ``rack > server > gpu``;
* ``four-level``: 2 zones x 4 blocks x 4 racks x 8 servers x 8 GPUs (2,048
  GPUs); ``zone > block > rack > server > gpu``;
* ``nvl72``: 4 scalable units x 4 NVL72 domains x 18 trays x 4 GPUs (1,152
  GPUs); ``su > nvl72 > server > gpu``.

Servers: 64 cores, 1 TiB (1,048,576 MiB).  Each cluster starts 35 % used
(seeded): one- to four-GPU jobs on random servers, running (they stay).
Pending gangs until their GPUs reach the free GPUs (``--load``: 1.0 of what
is free by default; the table also has 1.5): sizes 1, 2, 4, 8, 16, 32, 64, 128, 256 GPUs with probabilities
0.20, 0.10, 0.15, 0.20, 0.12, 0.10, 0.07, 0.04, 0.02; 8 CPU cores and 64 GiB
per GPU.  A gang larger than one server asks, with probability 0.3, a
*required* level -- the lowest level above the servers one of whose domains
holds it (none if no domain does) --, with probability 0.5 a *preferred*
level -- the innermost level above the servers --, else nothing.  Priority:
input order.

Solvers: the baselines ``kueue-tas`` (Kueue's topology-aware scheduling,
``BestFit``) and ``slurm-topology`` (Slurm's tree/block selection); alloc's
``best-fit`` and ``local-search`` (heuristics) and ``cpsat`` (exact; its
warm start runs every applicable heuristic, the baselines included), each
on the objectives ``jobs`` (gangs admitted) and ``gpus``; ``--time-limit``
seconds each (default 30).

Reported per cluster, seed and solver: gangs admitted (of the pending), GPUs
placed, domains per gang (the mean number of domains of the innermost level
above the servers a placed gang larger than one server uses), levels climbed
by the preferred gangs (`alloc.topology.climb`, in all), fragmentation (free
GPUs in domains of the innermost level above the servers that hold some
used GPU, as a share of the free GPUs; the same over servers: free GPUs on
servers that hold a used GPU), seconds, and for ``cpsat`` its bound and gap
(the value counts the running jobs too).  ``--plot`` writes the figure.

``--build``: a cluster of 16,000 servers under a four-level graph (2 zones x
10 blocks x 40 racks x 20 servers) built from the graph
(``Cluster.from_graph``) and from the levels form, and validated, in
seconds.

``--session``: a `Session` round at 1,000 x 8 GPUs (zone > block > rack >
server: 2 x 5 x 10 x 10), the Synergy job mix of ``bench/loop.py`` (5 % of
the arrivals gangs of 16 or 32 GPUs), load 0.85, with topology constraints
(jobs of two or more GPUs: 50 % prefer a rack, 25 % require a block) and
the same stream without them, the two sessions stepped alternately in one
run; the ratio of their median round latencies.

``--cpsat``: cpsat at 8,192 GPUs on a four-level instance (1,024 servers of
8 V100, 24 cores, 512 GiB: 2 x 4 x 8 x 16), 10 s: its gap to its bound.  Two
workloads: ``scale``, the 8k instance of ``bench/scale.py`` (the Synergy
mix, 8 jobs per server) whose jobs of two or more GPUs prefer a rack (50 %)
or require a block (25 %); ``gangs``, the mix of ``--session`` at 1.2 times
the GPUs (5 % gangs of 16 and 32 GPUs, the same constraints).

Usage::

    python bench/topology.py --compare --seeds 0 1 [--out FILE] [--plot FILE]
    python bench/topology.py --build
    python bench/topology.py --session --rounds 30
    python bench/topology.py --cpsat
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import Cluster, Job, Server, Session, allocate, violations  # noqa: E402
from alloc.arrays import cluster_arrays, outer_levels  # noqa: E402
from alloc.errors import InputWarning  # noqa: E402
from alloc.profiles import available_models, load_profile  # noqa: E402
from alloc.topology import hierarchy_graph, job_climb  # noqa: E402

SIZES = ((1, 0.20), (2, 0.10), (4, 0.15), (8, 0.20), (16, 0.12), (32, 0.10), (64, 0.07),
         (128, 0.04), (256, 0.02))
SOLVERS = ("kueue-tas", "slurm-topology", "best-fit", "local-search", "cpsat")
CORES, MEM = 64000, 1048576
#: fan-outs of each generated cluster, outermost first, and GPUs per server
SHAPES = {"two-level": (("rack",), (32,), 8, 8),
          "four-level": (("zone", "block", "rack"), (2, 4, 4), 8, 8),
          "nvl72": (("su", "nvl72"), (4, 4), 18, 4)}


def make_cluster(levels, fan, per, gpus, gpu_type="H100") -> Cluster:
    """Servers under the levels' domains (``fan`` per level, ``per`` servers
    per innermost domain), ``gpus`` each."""
    servers = []

    def walk(depth, path):
        if depth == len(levels):
            for i in range(per):
                name = "-".join(path + [f"s{i}"])
                servers.append(Server(name, CORES, MEM, gpus, gpu_type,
                                      domains=dict(zip(levels, ["-".join(path[:k + 1])
                                                                for k in range(len(path))]))))
            return
        for k in range(fan[depth]):
            walk(depth + 1, path + [f"{levels[depth][0]}{k}"])
    walk(0, [])
    return Cluster(tuple(servers), tuple(levels) + ("server", "gpu"))


def background(cluster: Cluster, rng: random.Random, share: float = 0.35) -> list[Job]:
    """Running one- to four-GPU jobs on random servers up to ``share`` of the GPUs."""
    free = {s.id: s.gpus for s in cluster.servers}
    jobs, used, target = [], 0, share * cluster.total_gpus
    from alloc import GpuShare, Placement
    while used < target:
        s = rng.choice(cluster.servers)
        n = rng.choice([1, 2, 4])
        if free[s.id] < n:
            continue
        k0 = s.gpus - free[s.id]
        gp = tuple(GpuShare(f"{s.id}/gpu{k}", 1000) for k in range(k0, k0 + n))
        free[s.id] -= n
        jid = f"bg{len(jobs)}"
        jobs.append(Job(jid, n, cpu=8000 * n, mem=65536 * n,
                        current=Placement(jid, gp, {s.id: 8000 * n}, {s.id: 65536 * n})))
        used += n
    return jobs


def domain_gpus(cluster: Cluster) -> dict[str, int]:
    """The GPUs of the smallest domain of each level above the servers."""
    arr = cluster_arrays(cluster)
    out = {}
    for lv in outer_levels(cluster.levels):
        tot: dict[int, int] = {}
        for s, d in zip(cluster.servers, arr.srv_domain[lv].tolist()):
            tot[d] = tot.get(d, 0) + s.gpus
        out[lv] = min(tot.values())
    return out


def gangs(cluster: Cluster, rng: random.Random, free: int) -> list[Job]:
    """Pending gangs up to ``free`` GPUs (see the module notes)."""
    outer = list(reversed(outer_levels(cluster.levels)))          # innermost first
    size = domain_gpus(cluster)
    per_server = max(s.gpus for s in cluster.servers)
    out, total = [], 0
    while total < free:
        u, acc, n = rng.random(), 0.0, SIZES[-1][0]
        for g, p in SIZES:
            acc += p
            if u < acc:
                n = g
                break
        loc = pref = None
        if n > per_server:
            v = rng.random()
            if v < 0.3:
                loc = next((lv for lv in outer if size[lv] >= n), None)
            elif v < 0.8:
                pref = outer[0]
        out.append(Job(f"g{len(out)}", n, cpu=8000 * n, mem=65536 * n, locality=loc,
                       preferred=pref))
        total += n
    return out


def instance(name: str, seed: int, load: float = 1.0) -> tuple[Cluster, list[Job]]:
    levels, fan, per, gpus = SHAPES[name]
    c = make_cluster(levels, fan, per, gpus, "GB200" if name == "nvl72" else "H100")
    rng = random.Random(seed)
    bg = background(c, rng)
    free = c.total_gpus - sum(j.gpus for j in bg)
    return c, bg + gangs(c, rng, load * free)


def metrics(cluster: Cluster, jobs: list[Job], a) -> dict:
    """Gangs admitted, GPUs placed, domains per gang, levels climbed, fragmentation."""
    arr = cluster_arrays(cluster)
    inner = outer_levels(cluster.levels)[-1]
    dom = arr.srv_domain[inner]
    sidx, per_server = cluster.server_index, max(s.gpus for s in cluster.servers)
    pending = [j for j in jobs if j.current is None]
    placed = [j for j in pending if a.placement(j.id) is not None]
    spans, climbed = [], 0
    for j in placed:
        gp = [g.gpu for g in a.placement(j.id).gpus]
        if j.gpus > per_server:
            spans.append(len({int(dom[sidx[g.split('/')[0]]]) for g in gp}))
        climbed += job_climb(cluster, j, gp)
    used = {}
    for p in a.placements:
        for g in p.gpus:
            d = int(dom[sidx[g.gpu.split('/')[0]]])
            used[d] = used.get(d, 0) + 1
    cap = {}
    for s, d in zip(cluster.servers, dom.tolist()):
        cap[d] = cap.get(d, 0) + s.gpus
    free = sum(cap[d] - used.get(d, 0) for d in cap)
    stranded = sum(cap[d] - used[d] for d in cap if 0 < used.get(d, 0) < cap[d])
    on: dict[str, int] = {}
    for p in a.placements:
        for g in p.gpus:
            s = g.gpu.split("/")[0]
            on[s] = on.get(s, 0) + 1
    part = sum(s.gpus - on[s.id] for s in cluster.servers if 0 < on.get(s.id, 0) < s.gpus)
    return {"gangs": len(placed), "pending": len(pending),
            "gpus": sum(j.gpus for j in placed), "pending_gpus": sum(j.gpus for j in pending),
            "domains_per_gang": statistics.mean(spans) if spans else 0.0,
            "climbed": climbed, "fragmentation": stranded / free if free else 0.0,
            "stranded_servers": part / free if free else 0.0}


def compare(clusters, seeds, solvers, time_limit, objectives, load=1.0) -> list[dict]:
    rows = []
    for name in clusters:
        for seed in seeds:
            c, jobs = instance(name, seed, load)
            for obj in objectives:
                for s in solvers:
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", InputWarning)
                        a = allocate(c, jobs, solver=s, objective=obj, time_limit=time_limit)
                    wall = time.perf_counter() - t0
                    bad = violations(c, jobs, a)
                    assert not bad, bad[:2]
                    row = {"cluster": name, "seed": seed, "load": load, "objective": obj,
                           "solver": s,
                           "seconds": round(wall, 2), "status": a.status.value,
                           "value": a.value, "bound": a.bound, "gap": a.gap,
                           **metrics(c, jobs, a)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| cluster | seed | objective | solver | gangs admitted | GPUs placed | "
           "domains / gang | levels climbed | stranded (domains) | stranded (servers) | s | "
           "status | gap |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        gap = "" if r["gap"] is None else f"{100 * r['gap']:.2f} %"
        out.append(f"| {r['cluster']} | {r['seed']} | {r['objective']} | {r['solver']} | "
                   f"{r['gangs']} / {r['pending']} | {r['gpus']} / {r['pending_gpus']} | "
                   f"{r['domains_per_gang']:.2f} | {r['climbed']} | "
                   f"{100 * r['fragmentation']:.1f} % | {100 * r['stranded_servers']:.1f} % | "
                   f"{r['seconds']:.2f} | {r['status']} | "
                   f"{gap} |")
    return "\n".join(out)


def plot(rows: list[dict], path: str) -> None:
    """Gangs admitted, GPUs placed and stranded free GPUs per cluster and
    solver (means over the seeds), one row of panels per offered load."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    loads = sorted({r.get("load", 1.0) for r in rows})
    fig, grid = plt.subplots(len(loads), 3, figsize=(15, 4.2 * len(loads)), squeeze=False)
    for axes, load in zip(grid, loads):
        _panels(axes, [r for r in rows if r.get("load", 1.0) == load], load)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _panels(axes, rows: list[dict], load: float) -> None:
    clusters = list(dict.fromkeys(r["cluster"] for r in rows))
    solvers = list(dict.fromkeys(r["solver"] for r in rows))
    for ax, (key, title) in zip(axes, (("gangs", "gangs admitted (objective jobs)"),
                                       ("gpus", "GPUs placed (objective gpus)"),
                                       ("stranded_servers",
                                        "free GPUs on partly used servers (objective gpus)"))):
        obj = "jobs" if key == "gangs" else "gpus"
        width = 0.8 / len(solvers)
        for k, s in enumerate(solvers):
            ys = []
            for c in clusters:
                sel = [r for r in rows if r["cluster"] == c and r["solver"] == s
                       and r["objective"] == obj]
                v = statistics.mean(r[key] / (r["pending"] if key == "gangs" else
                                              r["pending_gpus"] if key == "gpus" else 1)
                                    for r in sel) if sel else 0
                ys.append(100 * v)
            ax.bar([i + k * width for i in range(len(clusters))], ys, width, label=s)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(clusters))], clusters)
        ax.set_ylabel("% of pending" if key != "stranded_servers" else "% of free GPUs")
        ax.set_title(f"{title}, load {load}", fontsize=10)
    axes[0].legend(fontsize=8, loc="lower left")


# ---------------------------------------------------------------- figures
def build(servers_per_rack=20) -> dict:
    """Seconds to build (and validate) 16,000 servers under a four-level graph."""
    import networkx as nx
    from alloc.validate import prepare
    levels, fan = ("zone", "block", "rack"), (2, 10, 40)
    c0 = make_cluster(levels, fan, servers_per_rack, 8)
    t0 = time.perf_counter()
    g = nx.DiGraph()
    g.add_node("cluster", level="cluster")
    for s in c0.servers:
        up = "cluster"
        for lv in levels:
            d = s.domains[lv]
            if d not in g:
                g.add_node(d, level=lv)
                g.add_edge(up, d)
            up = d
        g.add_node(s.id, level="server", cpu=s.cpu, mem=s.mem, gpus=s.gpus, gpu_type=s.gpu_type)
        g.add_edge(up, s.id)
    t1 = time.perf_counter()
    c = Cluster.from_graph(g)
    t2 = time.perf_counter()
    prepare(c, [])
    cluster_arrays(c)
    t3 = time.perf_counter()
    lv = Cluster(tuple(Server(s.id, s.cpu, s.mem, s.gpus, s.gpu_type, domains=s.domains)
                       for s in c0.servers), c0.levels)
    t4 = time.perf_counter()
    prepare(lv, [])
    cluster_arrays(lv)
    t5 = time.perf_counter()
    back = hierarchy_graph(c)
    t6 = time.perf_counter()
    return {"servers": len(c.servers), "gpus": c.total_gpus, "graph_nodes": g.number_of_nodes(),
            "networkx_graph_s": round(t1 - t0, 3), "from_graph_s": round(t2 - t1, 3),
            "validate_and_arrays_s": round(t3 - t2, 3), "levels_form_s": round(t4 - t3, 3),
            "levels_validate_and_arrays_s": round(t5 - t4, 3),
            "hierarchy_graph_s": round(t6 - t5, 3),
            "round_trip_equal": dict(back.nodes(data=True)) == dict(g.nodes(data=True))
            and set(back.edges) == set(g.edges)}


MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
#: share of arrivals that are gangs of 16 or 32 GPUs (``--session``, ``--cpsat``)
GANGS = 0.05


def _job(rng, k, models, profiles, constrained, gang=None):
    u, acc, n = rng.random(), 0.0, 8
    for g, p in MIX:
        acc += p
        if u < acc:
            n = g
            break
    n = gang or n
    m = rng.choice(models)
    v = rng.random()
    kw = {}
    if constrained and n >= 2:
        if v < 0.5:
            kw["preferred"] = "rack"
        elif v < 0.75:
            kw["locality"] = "block"
    return Job(f"j{k}", n, cpu=3000 * n, mem=64000 * n, model=m, profile=profiles[m], **kw)


def session(rounds: int, solver: str, seed: int = 0, load: float = 0.85,
            mean_rounds: float = 20.0, time_limit: float = 1.0) -> dict:
    """Round latencies of two sessions on one stream, with and without the
    topology constraints, stepped alternately (see the module notes)."""
    c = make_cluster(("zone", "block", "rack"), (2, 5, 10), 10, 8)
    c = Cluster(tuple(Server(s.id, 24000, 512000, 8, "V100", domains=s.domains)
                      for s in c.servers), c.levels)
    G = c.total_gpus
    models = available_models()
    profiles = {m: load_profile(m) for m in models}
    rng = random.Random(seed)
    mean = (1 - GANGS) * sum(n * p for n, p in MIX) + GANGS * 24
    lam = load * G / mean / mean_rounds
    q = 1.0 / mean_rounds
    sessions, life, left = {}, {}, {True: {}, False: {}}
    first_jobs = {True: [], False: []}
    k = 0
    for _ in range(round(load * G / mean)):
        st = rng.getstate()
        for flag in (True, False):
            rng.setstate(st)
            first_jobs[flag].append(_job(rng, k, models, profiles, flag))
        life[f"j{k}"] = 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - q))
        k += 1
    for flag in (True, False):
        a = allocate(c, first_jobs[flag], solver="best-fit")
        jobs = list(a.advance(first_jobs[flag]))
        for j in jobs:
            if j.current is not None:
                left[flag][j.id] = life[j.id]
        sessions[flag] = Session(c, jobs=jobs, solver=solver, time_limit=time_limit)
    lat: dict[bool, list[float]] = {True: [], False: []}
    waiting = {True: [], False: []}
    for r in range(rounds + 5):
        arrivals = []
        for _ in range(max(0, round(rng.gauss(lam, math.sqrt(lam))))):
            gang = rng.choice([16, 32]) if rng.random() < GANGS else None
            st = rng.getstate()
            pair = {}
            for flag in (True, False):
                rng.setstate(st)
                pair[flag] = _job(rng, k, models, profiles, flag, gang)
            life[f"j{k}"] = 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - q))
            arrivals.append(pair)
            k += 1
        for flag in (True, False):
            s = sessions[flag]
            ev = [{"type": "finish", "job": j} for j, n in left[flag].items() if n <= 0]
            for e in ev:
                del left[flag][e["job"]]
            ev += [{"type": "submit", "job": p[flag]} for p in arrivals]
            s.apply(ev)
            res = s.step()
            for p in res.start:
                left[flag][p.job] = life[p.job]
            for j in left[flag]:
                left[flag][j] -= 1
            if r >= 5:
                lat[flag].append(res.latency_s)
                waiting[flag].append(len(res.allocation.unplaced))
    med = {f: statistics.median(v) for f, v in lat.items()}
    return {"solver": solver, "servers": len(c.servers), "rounds": rounds,
            "median_with_s": round(med[True], 4), "median_without_s": round(med[False], 4),
            "ratio": round(med[True] / med[False], 3),
            "p95_with_s": round(sorted(lat[True])[int(0.95 * len(lat[True]))], 4),
            "p95_without_s": round(sorted(lat[False])[int(0.95 * len(lat[False]))], 4),
            "mean_waiting_with": round(statistics.mean(waiting[True]), 1),
            "mean_waiting_without": round(statistics.mean(waiting[False]), 1)}


def cpsat_8k(workload: str = "scale", time_limit: float = 10.0, seed: int = 0) -> dict:
    """cpsat at 8,192 GPUs on a four-level instance (module notes)."""
    from dataclasses import replace
    c = make_cluster(("zone", "block", "rack"), (2, 4, 8), 16, 8)
    c = Cluster(tuple(Server(s.id, 24000, 512000, 8, "V100", domains=s.domains)
                      for s in c.servers), c.levels)
    rng = random.Random(seed)
    if workload == "scale":
        # bench/scale.py's 8k instance (alloc.experiments.generators' synergy,
        # 1,024 servers, seed 0), its jobs given the constraints of the notes
        from alloc.experiments.generators import generate
        jobs = []
        for j in generate("synergy", seed, servers=1024).jobs:
            v, kw = rng.random(), {}
            if j.gpus >= 2 and v < 0.5:
                kw["preferred"] = "rack"
            elif j.gpus >= 2 and v < 0.75:
                kw["locality"] = "block"
            jobs.append(replace(j, **kw))
    else:
        models = available_models()
        profiles = {m: load_profile(m) for m in models}
        jobs, total, k = [], 0, 0
        while total < 1.2 * c.total_gpus:
            gang = rng.choice([16, 32]) if rng.random() < GANGS else None
            j = _job(rng, k, models, profiles, True, gang)
            jobs.append(j)
            total += j.gpus
            k += 1
    t0 = time.perf_counter()
    a = allocate(c, jobs, solver="cpsat", time_limit=time_limit)
    wall = time.perf_counter() - t0
    assert not violations(c, jobs, a)
    return {"workload": workload, "gpus": c.total_gpus, "jobs": len(jobs),
            "seconds": round(wall, 2),
            "status": a.status.value, "value": round(a.value, 4), "bound": a.bound,
            "gap_percent": None if a.gap is None else round(100 * a.gap, 3),
            "source": a.stats.get("source"), "preferred_climbs": a.stats.get("preferred_climbs")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", action="store_true", help="the solver comparison")
    ap.add_argument("--clusters", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS))
    ap.add_argument("--objectives", nargs="+", default=["jobs", "gpus"])
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per solver call")
    ap.add_argument("--out", help="write the comparison's rows (JSON) here")
    ap.add_argument("--plot", help="write the comparison's figure here")
    ap.add_argument("--rows", nargs="+", metavar="FILE",
                    help="print the tables (and --plot the figure) of saved --out rows")
    ap.add_argument("--build", action="store_true", help="build 16,000 servers from a graph")
    ap.add_argument("--session", action="store_true", help="a Session round with and without")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--session-solver", default="best-fit")
    ap.add_argument("--load", type=float, default=None,
                    help="--compare: pending GPUs / free GPUs (default 1.0); --session: GPU "
                         "demand / GPUs (default 0.85)")
    ap.add_argument("--cpsat", action="store_true", help="cpsat at 8k GPUs, four levels, 10 s")
    ap.add_argument("--workloads", nargs="+", default=["scale", "gangs"],
                    choices=["scale", "gangs"], help="--cpsat: the instances")
    args = ap.parse_args(argv)
    if args.rows:
        rows = [r for f in args.rows for r in json.loads(Path(f).read_text())]
        for load in sorted({r.get("load", 1.0) for r in rows}):
            print(f"\nOffered load {load}:\n")
            print(table([r for r in rows if r.get("load", 1.0) == load]))
        if args.plot:
            plot(rows, args.plot)
    if args.compare:
        rows = compare(args.clusters, args.seeds, args.solvers, args.time_limit, args.objectives,
                       1.0 if args.load is None else args.load)
        print(table(rows))
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
        if args.plot:
            plot(rows, args.plot)
    if args.build:
        print(json.dumps(build()))
    if args.session:
        print(json.dumps(session(args.rounds, args.session_solver,
                                 load=0.85 if args.load is None else args.load)))
    if args.cpsat:
        for w in args.workloads:
            print(json.dumps(cpsat_8k(w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
