"""Generate the shipped instances in ``instances/`` (seeds recorded in each file).

* ``tiny-*.json``: a few servers and jobs, with the optimum of every objective
  found by exhaustive enumeration and stored under ``known_optimum``.
* ``synergy-16x8.json``: Synergy's cluster (16 servers x 8 V100, 24 cores,
  500 GB each) with ~128 jobs of the Synergy model mix, 1/2/4/8 GPUs
  (70/10/15/5 %), requests at the GPU-proportional share.
* ``large-64x8.json``: 64 servers / 512 GPUs with ~400 jobs.
* ``hetero-48x8.json``: 48 servers in 3 racks of V100, P100 and K80 with ~300
  jobs, some restricted to GPU types.

Usage: python bench/generate.py [--out instances] [--only NAME]
"""
from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.io import dump_instance  # noqa: E402
from alloc.model import Cluster, Instance, Job, Server, frozen_map  # noqa: E402
from alloc.objectives import OBJECTIVES  # noqa: E402
from alloc.problem import compile_problem  # noqa: E402
from alloc.profiles import available_models, load_profile  # noqa: E402

GB = 1024
CPU_PER_GPU, MEM_PER_GPU = 3000, 64000  # proportional share on 24-core / 500 GB / 8-GPU servers
GPU_MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))


def servers(n: int, *, gpus=8, cpu=24000, mem=512000, gpu_type="V100", prefix="s", rack=None):
    return [Server(f"{prefix}{i:02d}", cpu, mem, gpus, gpu_type, rack) for i in range(n)]


def synergy_jobs(rng: random.Random, n: int, *, prefix="j", types_choice=None):
    models = available_models()
    out = []
    for i in range(n):
        g = rng.choices([x for x, _ in GPU_MIX], [w for _, w in GPU_MIX])[0]
        m = models[rng.randrange(len(models))]
        types = types_choice(rng) if types_choice else ()
        out.append(Job(f"{prefix}{i:03d}", gpus=g, cpu=CPU_PER_GPU * g, mem=MEM_PER_GPU * g,
                       model=m, profile=load_profile(m), locality="server" if g > 1 else None,
                       gpu_types=types))
    return out


# ------------------------------------------------------------- brute force
def brute_force(cluster: Cluster, jobs, objective: str) -> float:
    """Optimum by enumeration: each job unplaced or on (server, option).
    Valid for whole-GPU jobs held on one server (no spreading) and for
    single-GPU shared jobs (checked per GPU)."""
    p = compile_problem(cluster, jobs, objective)
    choices = []
    for j in range(p.J):
        cj = [None]
        for s in range(p.S):
            if not p.allowed[j, s] or p.jobs[j].gpus > p.srv_gpus[s]:
                continue
            for o in range(len(p.options[j])):
                cj.append((s, o))
        choices.append(cj)
    best = 0.0
    for combo in itertools.product(*choices):
        cpu = [0] * p.S
        mem = [0] * p.S
        whole = [0] * p.S
        shares: list[list[int]] = [[] for _ in range(p.S)]
        val = 0.0
        for j, c in enumerate(combo):
            if c is None:
                continue
            s, o = c
            opt = p.options[j][o]
            cpu[s] += opt.cpu
            mem[s] += opt.mem
            job = p.jobs[j]
            if job.gpu_milli < 1000:
                shares[s].append(job.gpu_milli)
            else:
                whole[s] += job.gpus
            val += p.coef(j, o, s)
        if val <= best:
            continue
        if all(cpu[s] <= p.srv_cpu[s] and mem[s] <= p.srv_mem[s]
               and whole[s] + bins_needed(shares[s]) <= p.srv_gpus[s] for s in range(p.S)):
            best = val
    return round(best, 9)


def bins_needed(items: list[int]) -> int:
    """Fewest GPUs (1000 milli each) holding the shares (exact for few items)."""
    if not items:
        return 0
    items = sorted(items, reverse=True)
    for k in range(1, len(items) + 1):
        if _fits(items, [1000] * k):
            return k
    return len(items)


def _fits(items, free) -> bool:
    if not items:
        return True
    x, rest = items[0], items[1:]
    seen = set()
    for i, f in enumerate(free):
        if f >= x and f not in seen:
            seen.add(f)
            free[i] -= x
            ok = _fits(rest, free)
            free[i] += x
            if ok:
                return True
    return False


def with_optimum(name, cluster, jobs, seed, params) -> Instance:
    opt = {obj: brute_force(cluster, jobs, obj) for obj in OBJECTIVES}
    return Instance(name, cluster, tuple(jobs), meta=frozen_map({
        "description": "tiny instance; known_optimum found by exhaustive enumeration",
        "generator": {"script": "bench/generate.py", "seed": seed, **params},
        "known_optimum": opt}))


def tiny_grid(seed=1) -> Instance:
    rng = random.Random(seed)
    cl = Cluster(tuple(servers(2, gpus=4, cpu=12000, mem=256000)))
    jobs = []
    for i, m in enumerate(["res18", "alexnet", "bert", "m5", "res50", "shufflenet"]):
        g = rng.choice([1, 1, 2])
        jobs.append(Job(f"j{i}", gpus=g, cpu=CPU_PER_GPU * g, mem=MEM_PER_GPU * g, model=m,
                        profile=load_profile(m), locality="server" if g > 1 else None))
    return with_optimum("tiny-grid", cl, jobs, seed, {"kind": "grid"})


def tiny_share(seed=2) -> Instance:
    rng = random.Random(seed)
    cl = Cluster(tuple(servers(2, gpus=2, cpu=16000, mem=65536)))
    jobs = [Job(f"j{i}", gpus=1, gpu_milli=rng.choice([250, 400, 500, 600, 1000]),
                cpu=rng.choice([2000, 4000, 6000]), mem=rng.choice([8192, 16384]))
            for i in range(7)]
    return with_optimum("tiny-share", cl, jobs, seed, {"kind": "sharing"})


def tiny_types(seed=3) -> Instance:
    rng = random.Random(seed)
    cl = Cluster((Server("v0", 24000, 512000, 4, "V100"), Server("p0", 24000, 512000, 4, "P100"),
                  Server("k0", 24000, 512000, 4, "K80")))
    jobs = []
    for i, m in enumerate(["res50", "transformer", "vae", "lstm", "res18", "bert"]):
        g = rng.choice([1, 2, 4])
        types = rng.choice([(), (), ("V100",), ("P100", "K80")])
        jobs.append(Job(f"j{i}", gpus=g, cpu=CPU_PER_GPU * g, mem=MEM_PER_GPU * g, model=m,
                        profile=load_profile(m), locality="server" if g > 1 else None,
                        gpu_types=types))
    return with_optimum("tiny-types", cl, jobs, seed, {"kind": "gpu types"})


def synergy(seed=16, n_servers=16, n_jobs=128, name="synergy-16x8") -> Instance:
    rng = random.Random(seed)
    cl = Cluster(tuple(servers(n_servers)))
    jobs = synergy_jobs(rng, n_jobs)
    return Instance(name, cl, tuple(jobs), meta=frozen_map({
        "description": f"{n_servers} servers x 8 V100 (24 cores, 500 GB each), {n_jobs} jobs of "
                       "the Synergy model mix, 1/2/4/8 GPUs 70/10/15/5 %, requests at the "
                       "GPU-proportional share",
        "generator": {"script": "bench/generate.py", "seed": seed, "servers": n_servers,
                      "jobs": n_jobs}}))


def hetero(seed=48) -> Instance:
    rng = random.Random(seed)
    srv = []
    for r, t in enumerate(("V100", "P100", "K80")):
        srv += servers(16, gpu_type=t, prefix=f"{t.lower()}-", rack=f"r{r}")
    cl = Cluster(tuple(srv))

    def types(rng):
        return rng.choice([(), (), (), ("V100",), ("V100", "P100")])
    jobs = synergy_jobs(rng, 300, types_choice=types)
    return Instance("hetero-48x8", cl, tuple(jobs), meta=frozen_map({
        "description": "48 servers x 8 GPUs in three racks (V100, P100, K80), 300 jobs of the "
                       "Synergy mix, some restricted to GPU types",
        "generator": {"script": "bench/generate.py", "seed": seed}}))


BUILDERS = {
    "tiny-grid": tiny_grid, "tiny-share": tiny_share, "tiny-types": tiny_types,
    "synergy-16x8": synergy,
    "large-64x8": lambda: synergy(seed=64, n_servers=64, n_jobs=400, name="large-64x8"),
    "hetero-48x8": hetero,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "instances"))
    ap.add_argument("--only", default=None, help="comma-separated instance names")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(BUILDERS)
    for name in names:
        inst = BUILDERS[name]()
        dump_instance(inst, out / f"{name}.json")
        extra = inst.meta.get("known_optimum", "")
        print(f"{name}.json: {len(inst.cluster.servers)} servers, {len(inst.jobs)} jobs {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
