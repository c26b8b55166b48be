"""Benchmark of the exact backends (cpsat, milp, milp-cbc) against the greedy
heuristics and a straightforward x[job, server] CP-SAT model.

Usage::

    python bench/exact.py                         # built-in instances
    python bench/exact.py instances/synergy-16x8.json --time-limit 30
    python bench/exact.py --solvers cpsat,naive --sizes 16x128,64x400
    python bench/exact.py --solvers cpsat,milp --seeds 5   # + 5 generated seeds

Built-in instances (when no path is given): Synergy's cluster (servers of 8
V100, 24 cores, 500 GB) with jobs of the 12 Synergy models, 1/2/4/8 GPUs
(70/10/15/5 %), requests at the GPU-proportional share (3 cores, 62.5 GB per
GPU), multi-GPU jobs with server locality.  Profiles come from ``models/``
when present, else from the Synergy reference grids.

Columns: instance, solver, status, value, bound, gap % (bound - value) /
bound, seconds, the best greedy value (``proportional`` / ``best-fit``) and
the ratio value / greedy.

``--seeds N`` then runs the first built-in size (``--seed-size``, default
16x128) for the generator seeds ``seed+1 .. seed+N`` (one instance is not a
benchmark) and prints per solver how many runs were proven optimal, the
median and maximum time and the largest gap.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import allocate  # noqa: E402
from alloc.check import violations  # noqa: E402
from alloc.model import Cluster, Job, Profile, Server  # noqa: E402
from alloc.problem import Solution, compile_problem  # noqa: E402

GPU_MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
MODELS = ("alexnet", "bert", "deepspeech", "gnmt", "lstm", "m5", "mobilenet", "res18",
          "res50", "shufflenet", "transformer", "vae")
REFERENCE = ROOT.parent / "shared" / "data" / "reference" / "synergy_profiles.json"


# ------------------------------------------------------------------ profiles
def reference_profiles(path: Path = REFERENCE) -> dict[str, Profile]:
    """Profiles from the Synergy reference grids (cores -> milli, GB -> MiB;
    0.1 marks an infeasible cell)."""
    doc = json.loads(Path(path).read_text())
    cpu = tuple(int(round(c * 1000)) for c in doc["cpu_per_gpu"])
    mem = tuple(int(round(g * 1024)) for g in doc["mem_gb_per_gpu"])
    out = {}
    for name, m in doc["models"].items():
        grid = tuple(tuple(None if abs(v - 0.1) < 1e-9 else float(v) for v in row)
                     for row in m["tput"])
        out[name] = Profile(name, cpu, mem, grid)
    return out


def profiles() -> dict[str, Profile]:
    try:
        from alloc.profiles import available_models, load_profile
        names = available_models()
        if names:
            return {n: load_profile(n) for n in names}
    except Exception:
        pass
    return reference_profiles()


# ----------------------------------------------------------------- instances
def synergy_instance(n_servers: int, n_jobs: int, seed: int = 0, locality: str | None = "server"):
    rng = random.Random(seed)
    profs = profiles()
    names = sorted(profs)
    servers = tuple(Server(f"s{i:03d}", 24000, 512000, 8, "V100") for i in range(n_servers))
    jobs = []
    for i in range(n_jobs):
        g = rng.choices([x for x, _ in GPU_MIX], [w for _, w in GPU_MIX])[0]
        m = names[rng.randrange(len(names))]
        jobs.append(Job(f"j{i:03d}", gpus=g, cpu=3000 * g, mem=64000 * g, model=m,
                        profile=profs[m], locality=locality if g > 1 else None))
    return f"synergy-{n_servers}x{n_jobs}", Cluster(servers), tuple(jobs)


def load(path: str):
    from alloc.io import load_instance
    inst = load_instance(path)
    return inst.name or Path(path).stem, inst.cluster, tuple(inst.jobs)


# --------------------------------------------------- the straightforward peer
def naive_cpsat(cluster, jobs, objective="throughput", time_limit=30.0, seed=0):
    """x[j, s, o] in {0,1}: job j on server s at option o (one server per job;
    whole-GPU jobs; GPU, CPU and memory rows per server).  No aggregation, no
    symmetry breaking, no warm start.  Returns (status, value, bound, seconds)."""
    from ortools.sat.python import cp_model
    t0 = time.perf_counter()
    p = compile_problem(cluster, jobs, objective)
    m = cp_model.CpModel()
    x = {}
    for j in range(p.J):
        for s in range(p.S):
            if not p.allowed[j, s] or p.jobs[j].gpus > p.srv_gpus[s]:
                continue
            for o, opt in enumerate(p.options[j]):
                if opt.cpu <= p.srv_cpu[s] and opt.mem <= p.srv_mem[s]:
                    x[j, s, o] = m.new_bool_var(f"x{j}_{s}_{o}")
    for j in range(p.J):
        m.add_at_most_one(v for (jj, _, _), v in x.items() if jj == j)
    for s in range(p.S):
        on = [(j, o, v) for (j, ss, o), v in x.items() if ss == s]
        m.add(sum(p.jobs[j].gpus * p.jobs[j].gpu_milli * v for j, o, v in on)
              <= 1000 * int(p.srv_gpus[s]))
        m.add(sum(p.options[j][o].cpu * v for j, o, v in on) <= int(p.srv_cpu[s]))
        m.add(sum(p.options[j][o].mem * v for j, o, v in on) <= int(p.srv_mem[s]))
    m.maximize(sum(p.coef(j, o, s) * v for (j, s, o), v in x.items()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit - (time.perf_counter() - t0))
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    st = solver.solve(m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return "unknown", 0.0, None, time.perf_counter() - t0
    # decode: GPUs of each server in order (milli jobs share the lowest GPUs)
    from alloc.engines.greedy.state import State
    state = State(p)
    for (j, s, o), v in sorted(x.items()):
        if solver.value(v):
            a = state.try_server(j, s, o)
            if a is not None:
                state.place(j, a, o)
    alloc = p.to_allocation(Solution(state.assign), solver="naive", wall_time_s=0)
    bad = violations(cluster, jobs, alloc)
    value = 0.0 if bad else alloc.value
    status = "optimal" if st == cp_model.OPTIMAL and abs(value - solver.objective_value) < 1e-6 \
        else "feasible"
    return status, value, solver.best_objective_bound, time.perf_counter() - t0


# ------------------------------------------------------------------- running
def greedy_value(cluster, jobs, objective) -> float:
    best = 0.0
    for name in ("proportional", "best-fit"):
        a = allocate(cluster, jobs, solver=name, objective=objective)
        best = max(best, a.value)
    return best


def run(instances, solvers, time_limit, objective, seed):
    from ortools.sat.python import cp_model  # noqa: F401  (import outside the timing)
    import pulp  # noqa: F401
    rows = []
    for name, cluster, jobs in instances:
        g = greedy_value(cluster, jobs, objective)
        for sv in solvers:
            if sv == "naive":
                st, v, b, secs = naive_cpsat(cluster, jobs, objective, time_limit, seed)
            else:
                t0 = time.perf_counter()
                a = allocate(cluster, jobs, solver=sv, objective=objective,
                             time_limit=time_limit, seed=seed, instance=name)
                secs = time.perf_counter() - t0
                st, v, b = str(a.status), a.value, a.bound
            gap = (100.0 * max(0.0, b - v) / max(abs(b), 1e-9)) \
                if b is not None and st != "unknown" else None
            rows.append((name, sv, st, v, b, gap, secs, g, v / g if g else None))
            print(fmt_row(rows[-1]), flush=True)
    return rows


HEADER = (f"{'instance':<18} {'solver':<9} {'status':<9} {'value':>9} {'bound':>9} "
          f"{'gap%':>7} {'sec':>6} {'greedy':>9} {'/greedy':>8}")


def fmt_row(r) -> str:
    name, sv, st, v, b, gap, secs, g, ratio = r
    bs = f"{b:9.3f}" if b is not None else f"{'-':>9}"
    gs = f"{gap:7.3f}" if gap is not None else f"{'-':>7}"
    rs = f"{ratio:8.3f}" if ratio is not None else f"{'-':>8}"
    return f"{name:<18} {sv:<9} {st:<9} {v:9.3f} {bs} {gs} {secs:6.1f} {g:9.3f} {rs}"


def summarize(rows, solvers) -> list[str]:
    """Per solver: proven / runs, median and max seconds, max gap %."""
    import statistics
    out = [f"{'solver':<9} {'proven':>7} {'median s':>9} {'max s':>7} {'max gap%':>9}"]
    for sv in solvers:
        rs = [r for r in rows if r[1] == sv]
        if not rs:
            continue
        proven = sum(1 for r in rs if r[2] == "optimal")
        secs = [r[6] for r in rs]
        gaps = [r[5] for r in rs if r[5] is not None]
        gs = f"{max(gaps):9.3f}" if gaps else f"{'-':>9}"
        out.append(f"{sv:<9} {f'{proven}/{len(rs)}':>7} {statistics.median(secs):9.1f} "
                   f"{max(secs):7.1f} {gs}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instances", nargs="*", help="instance files (alloc.instance/1)")
    ap.add_argument("--solvers", default="cpsat,milp,milp-cbc,naive")
    ap.add_argument("--sizes", default="16x128,64x400",
                    help="built-in instances SERVERSxJOBS, comma separated")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--objective", default="throughput")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=0,
                    help="also run N generated seeds of --seed-size and summarize")
    ap.add_argument("--seed-size", default="16x128", help="SERVERSxJOBS for --seeds")
    ap.add_argument("--locality", default="server",
                    help="locality of multi-GPU jobs in built-in instances ('none' to allow spreading)")
    args = ap.parse_args(argv)
    loc = None if args.locality == "none" else args.locality
    if args.instances:
        insts = [load(p) for p in args.instances]
    else:
        insts = []
        for spec in args.sizes.split(","):
            s, j = (int(x) for x in spec.lower().split("x"))
            insts.append(synergy_instance(s, j, seed=args.seed, locality=loc))
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    print(HEADER)
    run(insts, solvers, args.time_limit, args.objective, args.seed)
    if args.seeds > 0:
        s, j = (int(x) for x in args.seed_size.lower().split("x"))
        seeded = []
        for k in range(1, args.seeds + 1):
            name, cl, jobs = synergy_instance(s, j, seed=args.seed + k, locality=loc)
            seeded.append((f"{name}/s{args.seed + k}", cl, jobs))
        print()
        print(HEADER)
        rows = run(seeded, solvers, args.time_limit, args.objective, args.seed)
        print()
        print(f"{args.seeds} seeds of synergy-{args.seed_size}, time limit {args.time_limit:g} s:")
        for line in summarize(rows, solvers):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
