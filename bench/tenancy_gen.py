"""Generate the multi-tenant scenarios ``instances/tenancy_*.json``.

Clusters are racks of 8-GPU servers (2 sockets x 2 PCIe switches), levels
rack -> server -> socket -> switch -> gpu.  Tenants own cells at several
levels; jobs are guaranteed (inside their tenant's cells) or opportunistic,
with priorities; some run already (``current``, produced by placing an earlier
batch with ``hived``) so that a new batch of guaranteed jobs forces preemption.
Profiles are the shipped models with sub-server span factors (switch 1.0,
socket 0.95, server 0.9) and, for elastic jobs, a concave scaling curve.

Scenarios (seeds recorded in each file's ``generator`` field):

* ``tenancy_small``   8 servers, 3 tenants, 40 jobs, 12 of them running.
* ``tenancy_colocate``  4 servers, guaranteed 1-GPU jobs at 600 milli with GPU
  memory, opportunistic 400-milli jobs that can co-locate (AntMan).
* ``tenancy_elastic`` 4 servers, elastic jobs (``min_gpus``/``max_gpus``).
* ``tenancy_64x8``    64 servers / 512 GPUs, 4 tenants, 400 jobs, 80 running
  (the size at which ``cpsat-tenancy`` should be within 1 % of its bound in 30 s).
* ``tenancy_hived``   the design cluster of HiveD's scheduler (Zhao et al.,
  OSDI'20) in alloc's terms: 16-GPU V100 servers (2 sockets x 2 switches) in
  racks of two, 8-GPU P100 servers in one rack, 2-GPU "CT1" servers; tenant
  vc1 owns two V100 rack cells and six server cells, vc2 two P100 server
  cells, two P100 socket cells and one CT1 server cell.  Its jobs are the
  scheduler's "should succeed" batch: buddy 1-GPU jobs, an 8-GPU job, an
  opportunistic 1-GPU job, 32-GPU (two-server) guaranteed and opportunistic
  jobs, a 2-GPU CT1 job (``tests/test_hived_design.py`` plays its rounds).
* ``tenancy_mixed``   P100 servers of 16 and 8 GPUs (cells at the GPU and
  switch levels only: the server level differs in size), running jobs and a
  batch with multi-server jobs.

Usage: python bench/tenancy_gen.py [--out instances] [--only NAME]
"""
from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc import allocate  # noqa: E402
from alloc.io import dump_instance  # noqa: E402
from alloc.model import Cell, Cluster, Instance, Job, Server, Tenant, frozen_map  # noqa: E402
from alloc.profiles import load_profile  # noqa: E402
from alloc.tenancy import with_current  # noqa: E402

LEVELS = ("rack", "server", "socket", "switch", "gpu")
SPAN = {"switch": 1.0, "socket": 0.95, "server": 0.9, "rack": 0.6, "cluster": 0.5}
SCALING = {1: 0.55, 2: 1.0, 4: 1.8, 8: 3.1}
MODELS = ("res18", "res50", "bert", "transformer", "gnmt", "lstm")
CPU_PER_GPU, MEM_PER_GPU = 3000, 32000


def profiles(elastic: bool = False):
    out = {}
    for m in MODELS:
        p = load_profile(m)
        name = f"{m}-topo"
        out[name] = replace(p, name=name, span=frozen_map(SPAN),
                            scaling=frozen_map(SCALING if elastic else {}))
    return out


def make_cluster(n_servers: int, tenants: dict, rack_size: int = 4,
                 gpu_type: str = "V100") -> Cluster:
    servers = tuple(Server(f"s{i:03d}", 32000, 512000, 8, gpu_type, f"r{i // rack_size:02d}", 2, 2)
                    for i in range(n_servers))
    ten = {k: Tenant(k, tuple(Cell(lv, n, gpu_type) for lv, n in cells))
           for k, cells in tenants.items()}
    return Cluster(servers, LEVELS, frozen_map(ten))


def job(rng, jid, n, models, *, tenant=None, prio=0, locality=None, **kw):
    m = rng.choice(sorted(models))
    return Job(jid, gpus=n, cpu=CPU_PER_GPU * max(n, 1), mem=MEM_PER_GPU * max(n, 1),
               model=m, profile=models[m], tenant=tenant, guaranteed=tenant is not None,
               priority=prio, locality=locality, **kw)


LOC = {1: None, 2: "switch", 4: "socket", 8: "server"}


def mixed_jobs(rng, n, tenants, models, prefix, frac_guaranteed=0.7, sizes=(1, 1, 1, 2, 2, 4, 8)):
    out = []
    for i in range(n):
        g = rng.choice(sizes)
        loc = LOC.get(g) if rng.random() < 0.6 else None
        if rng.random() < frac_guaranteed:
            out.append(job(rng, f"{prefix}{i:03d}", g, models, tenant=rng.choice(tenants),
                           prio=rng.choice((0, 0, 1, 2)), locality=loc))
        else:
            out.append(job(rng, f"{prefix}{i:03d}", g, models, prio=rng.choice((0, 1)),
                           locality=loc))
    return out


def with_running(cluster, first, rest):
    """Place ``first`` with hived; those placed run, the rest are pending."""
    r = allocate(cluster, first, solver="hived")
    running = [j for j in with_current(first, r) if j.current is not None]
    return tuple(running) + tuple(rest)


def tenancy_small(seed=11) -> Instance:
    rng = random.Random(seed)
    models = profiles()
    c = make_cluster(8, {"vc-a": [("server", 2)], "vc-b": [("socket", 2), ("switch", 2)],
                         "vc-c": [("switch", 4), ("gpu", 4)]})
    first = mixed_jobs(rng, 16, ["vc-a", "vc-b", "vc-c"], models, "run", frac_guaranteed=0.3)
    rest = mixed_jobs(rng, 28, ["vc-a", "vc-b", "vc-c"], models, "new", frac_guaranteed=0.8)
    jobs = with_running(c, first, rest)
    return Instance("tenancy_small", c, jobs, frozen_map(models), frozen_map({
        "description": "8 servers, 3 tenants with cells at 4 levels; some jobs running, a "
                       "batch of guaranteed jobs that needs preemption",
        "generator": {"script": "bench/tenancy_gen.py", "scenario": "tenancy_small", "seed": seed}}))


def tenancy_colocate(seed=12) -> Instance:
    rng = random.Random(seed)
    models = profiles()
    c = make_cluster(4, {"vc-a": [("server", 1)], "vc-b": [("socket", 2)]})
    jobs = []
    for i in range(12):
        jobs.append(job(rng, f"g{i:02d}", 1, models, tenant="vc-a" if i < 8 else "vc-b",
                        gpu_milli=600, gpu_mem=rng.choice((12000, 16000, 20000))))
    for i in range(16):
        jobs.append(job(rng, f"o{i:02d}", 1, models, gpu_milli=400,
                        gpu_mem=rng.choice((8000, 12000, 16000))))
    for i in range(4):
        jobs.append(job(rng, f"w{i:02d}", 4, models, locality="socket"))
    return Instance("tenancy_colocate", c, tuple(jobs), frozen_map(models), frozen_map({
        "description": "AntMan co-location: opportunistic 400-milli jobs next to guaranteed "
                       "600-milli jobs within GPU memory",
        "generator": {"script": "bench/tenancy_gen.py", "scenario": "tenancy_colocate", "seed": seed}}))


def tenancy_elastic(seed=13) -> Instance:
    rng = random.Random(seed)
    models = profiles(elastic=True)
    c = make_cluster(4, {"vc-a": [("server", 2)]})
    jobs = []
    for i in range(6):
        jobs.append(job(rng, f"e{i:02d}", 2, models, tenant="vc-a" if i < 3 else None,
                        min_gpus=1, max_gpus=8))
    for i in range(6):
        jobs.append(job(rng, f"f{i:02d}", rng.choice((1, 2, 4)), models))
    return Instance("tenancy_elastic", c, tuple(jobs), frozen_map(models), frozen_map({
        "description": "elastic jobs (min_gpus..max_gpus) next to fixed ones",
        "generator": {"script": "bench/tenancy_gen.py", "scenario": "tenancy_elastic", "seed": seed}}))


def tenancy_64x8(seed=64) -> Instance:
    rng = random.Random(seed)
    models = profiles()
    c = make_cluster(64, {"vc-a": [("rack", 2), ("server", 6)], "vc-b": [("server", 10)],
                          "vc-c": [("socket", 12), ("switch", 8)],
                          "vc-d": [("switch", 16), ("gpu", 16)]})
    tenants = ["vc-a", "vc-b", "vc-c", "vc-d"]
    first = mixed_jobs(rng, 100, tenants, models, "run", frac_guaranteed=0.4)
    rest = mixed_jobs(rng, 320, tenants, models, "new", frac_guaranteed=0.6)
    jobs = with_running(c, first, rest)
    return Instance("tenancy_64x8", c, jobs, frozen_map(models), frozen_map({
        "description": "64 servers / 512 GPUs, 4 tenants, ~400 jobs, some running",
        "generator": {"script": "bench/tenancy_gen.py", "scenario": "tenancy_64x8", "seed": seed}}))


def hived_design_cluster() -> Cluster:
    """The design cluster of HiveD's scheduler in alloc's terms (module notes)."""
    dgx2 = [Server(f"d{r}{k}", 96000, 1536000, 16, "V100", f"r{r}", 2, 2)
            for r in range(1, 7) for k in range(2)]
    dgx1 = [Server(f"p{k}", 64000, 512000, 8, "P100", "rp", 2, 2) for k in range(3)]
    ct1 = [Server(f"c{k}", 16000, 128000, 2, "CT1", "rc", 1, 1) for k in range(2)]
    ten = {"vc1": Tenant("vc1", (Cell("rack", 2, "V100"), Cell("server", 6, "V100"))),
           "vc2": Tenant("vc2", (Cell("server", 2, "P100"), Cell("socket", 2, "P100"),
                                 Cell("server", 1, "CT1")))}
    return Cluster(tuple(dgx2 + dgx1 + ct1), LEVELS, frozen_map(ten))


def design_job(jid, n, tenant=None, prio=0, gpu_type=None, **kw) -> Job:
    """A job of the design scenario: 2 cores and 16 GiB per GPU."""
    return Job(jid, gpus=n, cpu=2000 * max(n, 1), mem=16384 * max(n, 1),
               gpu_types=(gpu_type,) if gpu_type else (), tenant=tenant,
               guaranteed=tenant is not None, priority=prio, **kw)


def tenancy_hived(seed=0) -> Instance:
    c = hived_design_cluster()
    jobs = (design_job("buddy-a", 1, "vc1", 0, "V100"), design_job("buddy-b", 1, "vc1", 1, "V100"),
            design_job("half", 8, "vc1", 2, "V100", locality="socket"),
            design_job("opp-1", 1, None, 0, "V100"),
            design_job("rack-group", 32, "vc1", 1, "V100", locality="rack"),
            design_job("pair-a", 32, "vc1", 1, "V100"), design_job("pair-b", 32, "vc1", 1, "V100"),
            design_job("opp-pair", 32, None, 0, "V100"),
            design_job("ct-a", 2, "vc2", 0, "CT1"))
    return Instance("tenancy_hived", c, jobs, frozen_map({}), frozen_map({
        "description": "HiveD's design cluster and its scheduler's batch of jobs that should "
                       "all be placed",
        "generator": {"script": "bench/tenancy_gen.py", "scenario": "tenancy_hived",
                      "seed": seed}}))


def tenancy_mixed(seed=21) -> Instance:
    rng = random.Random(seed)
    models = profiles()
    servers = tuple(Server(f"m{i:02d}", 64000, 1024000, 16 if i % 3 == 0 else 8, "P100",
                           f"r{i // 4}", 2, 2) for i in range(12))
    ten = {"vc-a": Tenant("vc-a", (Cell("gpu", 12, "P100"),)),
           "vc-b": Tenant("vc-b", (Cell("gpu", 16, "P100"),)),
           "vc-c": Tenant("vc-c", (Cell("gpu", 8, "P100"),))}
    c = Cluster(servers, LEVELS, frozen_map(ten))
    tenants = ["vc-a", "vc-b", "vc-c"]
    first = mixed_jobs(rng, 24, tenants, models, "run", frac_guaranteed=0.4,
                       sizes=(1, 1, 2, 4, 8, 16))
    rest = mixed_jobs(rng, 40, tenants, models, "new", frac_guaranteed=0.6,
                      sizes=(1, 1, 2, 4, 8, 16, 24))
    jobs = with_running(c, first, rest)
    return Instance("tenancy_mixed", c, jobs, frozen_map(models), frozen_map({
        "description": "16- and 8-GPU P100 servers; tenant cells at the GPU level; jobs up to "
                       "24 GPUs (several servers)",
        "generator": {"script": "bench/tenancy_gen.py", "scenario": "tenancy_mixed", "seed": seed}}))


SCENARIOS = {"tenancy_small": tenancy_small, "tenancy_colocate": tenancy_colocate,
             "tenancy_elastic": tenancy_elastic, "tenancy_64x8": tenancy_64x8,
             "tenancy_hived": tenancy_hived, "tenancy_mixed": tenancy_mixed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "instances"))
    ap.add_argument("--only", choices=sorted(SCENARIOS))
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, fn in SCENARIOS.items():
        if a.only and name != a.only:
            continue
        inst = fn()
        dump_instance(inst, out / f"{name}.json")
        print(f"{name}: {len(inst.cluster.servers)} servers, {len(inst.jobs)} jobs "
              f"({sum(j.current is not None for j in inst.jobs)} running)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
