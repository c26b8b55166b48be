"""GPU memory and compute as resources of a GPU: formats, validation,
violations(), the capabilities that refuse solvers, and the property that no
solver over-commits them."""
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings

from alloc import Cluster, Job, Server, allocate, load_instance, violations
from alloc.errors import InputError
from alloc.io import allocation_from_dict, allocation_to_dict, instance_from_dict, instance_to_dict
from alloc.model import Allocation, Cell, GpuShare, Instance, Placement, Tenant
from alloc.resources import needs
from alloc.solve import needed_capabilities
from alloc.testing.strategies import instances


def cluster(gpu_mem=None, tenants=True):
    return Cluster((Server("s0", 32000, 256000, 2, "V100", gpu_mem=gpu_mem),),
                   tenants={"t": Tenant("t", (Cell("gpu", 2),))} if tenants else {})


def rider(jid="o", mem=4000, comp=300, **kw):
    return Job(jid, gpus=1, cpu=1000, mem=1000, gpu_mem=mem, gpu_compute=comp, **kw)


def place(job, gpu, milli, mem=None, comp=None):
    return Placement(job.id, (GpuShare(gpu, milli, mem, comp),), {"s0": job.cpu}, {"s0": job.mem}, 1.0)


def alloc_of(jobs, placements):
    placed = {p.job for p in placements}
    return Allocation(tuple(placements), tuple(j.id for j in jobs if j.id not in placed))


# ------------------------------------------------------------------ formats
def test_new_keys_round_trip_and_old_files_keep_their_meaning(instances_dir):
    c = cluster(gpu_mem=24576)
    o = rider(gpu_mem_min=1000)
    inst = Instance("x", c, (o,))
    back = instance_from_dict(json.loads(json.dumps(instance_to_dict(inst))))
    assert back.cluster.servers[0].gpu_mem == 24576
    assert (back.jobs[0].gpu_compute, back.jobs[0].gpu_mem_min) == (300, 1000)
    a = alloc_of([o], [place(o, "s0/gpu0", 0, 3000, 200)])
    doc = allocation_to_dict(a)
    assert doc["placements"][0]["gpus"][0] == {"gpu": "s0/gpu0", "milli": 0, "mem": 3000,
                                                "compute": 200}
    assert allocation_from_dict(doc).placements[0].gpus[0] == GpuShare("s0/gpu0", 0, 3000, 200)
    old = load_instance(instances_dir / "tiny-share.json")          # no new keys: unchanged
    r = allocate(old.cluster, old.jobs, solver="best-fit")
    assert "gpu" not in str([g for p in allocation_to_dict(r)["placements"] for g in p["gpus"]
                             if set(g) != {"gpu", "milli"}])


@pytest.mark.parametrize("edit,field", [
    (lambda d: d["jobs"][0].update(gpu_compute=0), "jobs[0].gpu_compute"),
    (lambda d: d["jobs"][0].update(gpu_compute=1001), "jobs[0].gpu_compute"),
    (lambda d: d["jobs"][0].update(gpu_mem_min=-1), "jobs[0].gpu_mem_min"),
    (lambda d: d["jobs"][0].update(gpu_mem_min=9000), "jobs[0].gpu_mem_min"),
    (lambda d: d["jobs"][0].update(gpu_mem=40000), "jobs[0].gpu_mem"),
    (lambda d: d["jobs"][0].update(gpu_mem_mn=10), "gpu_mem_mn"),
    (lambda d: d["cluster"]["servers"][0].update(gpu_mem=0), "cluster.servers[0].gpu_mem"),
    (lambda d: d["jobs"][0].update(current={"gpus": [{"gpu": "s0/gpu0", "milli": 0,
                                                      "compute": 2000}]}), "compute"),
])
def test_bad_input_is_one_line_naming_the_field(edit, field):
    doc = instance_to_dict(Instance("x", cluster(), (rider(),)))
    edit(doc)
    with pytest.raises(InputError) as e:
        instance_from_dict(doc, "x.json")
    msg = str(e.value).splitlines()[0]
    assert field in msg


def test_cli_bad_input_exit_2(tmp_path):
    doc = instance_to_dict(Instance("x", cluster(), (rider(mem=40000),)))
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "alloc", "solve", str(p), "--solver", "antman"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "jobs[0].gpu_mem" in r.stderr and "exceeds the memory of every GPU" in r.stderr
    doc["jobs"][0]["gpu_memm"] = doc["jobs"][0].pop("gpu_mem")
    p.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "alloc", "solve", str(p)], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "unknown key 'gpu_memm'" in r.stderr


# --------------------------------------------------------------- violations
def test_memory_and_compute_over_commit_are_violations():
    c = cluster(tenants=False)
    a, b = rider("a", 20000, 600), rider("b", 20000, 600)
    v = violations(c, [a, b], alloc_of([a, b], [place(a, "s0/gpu0", 500), place(b, "s0/gpu0", 500)]))
    assert any("GPU memory" in x for x in v) and any("compute" in x for x in v)
    ok = violations(c, [a, b], alloc_of([a, b], [place(a, "s0/gpu0", 0, 20000, 500),
                                                 place(b, "s0/gpu1", 0)]))
    assert ok == [], ok


def test_share_rules():
    c = cluster()
    g = Job("g", gpus=1, cpu=1000, mem=1000, gpu_mem=20000, gpu_compute=700, tenant="t",
            guaranteed=True)
    o = rider("o", 8000, 300, gpu_mem_min=2000)
    capped = alloc_of([g], [place(g, "s0/gpu0", 1000, 10000)])
    assert any("guaranteed job gets its 20000" in x for x in violations(c, [g], capped))
    low = alloc_of([o], [place(o, "s0/gpu0", 0, 1000)])
    assert any("expected 2000..8000" in x for x in violations(c, [o], low))
    plain = Job("p", gpus=1, cpu=1000, mem=1000)
    ride = alloc_of([plain], [place(plain, "s0/gpu0", 0, 1000, 100)])
    assert any("opportunistic share" in x for x in violations(c, [plain], ride))
    both = alloc_of([g, o], [place(g, "s0/gpu0", 1000), place(o, "s0/gpu0", 0, 8000, 300)])
    assert violations(c, [g, o], both) == []


def test_capabilities_refuse_solvers_that_ignore_the_new_dimensions():
    c = cluster(tenants=False)
    assert needs(c, [Job("a", gpus=1, cpu=1, mem=1)]) == set()
    assert needs(c, [rider()]) == {"gpu-compute", "gpu-memory"}
    share = Job("s", gpus=1, gpu_milli=250, cpu=1, mem=1, gpu_mem=16000)
    assert needed_capabilities(c, [share]) >= {"gpu-memory"}
    with pytest.raises(InputError, match="gpu-compute"):
        allocate(c, [rider()], solver="best-fit")
    assert allocate(c, [share], solver="hived").placements


def test_types_too_small_for_a_job_are_never_used():
    c = Cluster((Server("p", 8000, 64000, 2, "P100"), Server("v", 8000, 64000, 2, "V100")))
    j = Job("j", gpus=1, cpu=100, mem=100, gpu_mem=20000)
    assert "gpu-memory" not in needed_capabilities(c, [j])
    r = allocate(c, [j], solver="best-fit")
    assert r.placement("j").gpus[0].gpu.startswith("v/")


# ----------------------------------------------------------------- property
MEMORY = {"sharing", "locality", "spread", "gpu-memory", "gpu-compute", "tenancy",
          "colocation", "preemption"}


@settings(max_examples=25, deadline=None)
@given(instances(max_servers=2, max_jobs=5, capabilities=MEMORY))
def test_no_solver_over_commits_gpu_memory_or_compute(inst):
    """Every heuristic that takes the input keeps GPU memory and compute
    (the exact solvers run in the conformance suite)."""
    from alloc.testing import applicable_solvers, overcommit_problems
    c, jobs = inst
    ran = applicable_solvers(c, jobs, exact=False)
    assert ran                                   # antman takes every such input
    for name in ran:
        r = allocate(c, jobs, solver=name, time_limit=3, check=False)
        assert overcommit_problems(c, jobs, r) == [], name
        assert violations(c, jobs, r) == [], name


@pytest.mark.parametrize("objective", ["throughput", "gpus", "jobs"])
def test_cpsat_tenancy_never_over_commits_gpu_memory(objective):
    """Neither exact model sees GPU memory: on an input where it binds,
    cpsat-tenancy returned a shared job at its full 40,000 MiB on a 16 GiB GPU
    (its least memory, 12,534 MiB, fits); its answer now holds and is not
    below hived's."""
    c = Cluster((Server("s0", 24000, 8000, 1, "P100"), Server("s1", 4000, 256000, 2, "P100")))
    jobs = [Job("a", gpus=1, gpu_milli=100, cpu=2000, mem=0, gpu_mem=40000, gpu_mem_min=12534,
                weight=3.7),
            Job("b", gpus=1, gpu_milli=700, cpu=1000, mem=4000, weight=0.5)]
    assert "gpu-memory" in needs(c, jobs)
    h = allocate(c, jobs, solver="hived", objective=objective, time_limit=5)
    a = allocate(c, jobs, solver="cpsat-tenancy", objective=objective, time_limit=5)
    assert not violations(c, jobs, a) and a.value >= h.value - 1e-9
    assert a.bound is None or a.value <= a.bound + 1e-6


def test_needs_reads_the_servers_once_per_cluster(monkeypatch):
    """A session checks each submitted job with `needs`: the GPU memory sizes
    by type are read from the servers once per cluster, not per job, and the
    answer is the same as from a fresh cluster."""
    import alloc.resources as res
    servers = tuple(Server(f"s{i}", 8000, 64000, 2, "P100" if i % 2 else "V100")
                    for i in range(50))
    c = Cluster(servers)
    big = Job("a", gpus=1, gpu_milli=500, cpu=1, mem=1, gpu_mem=12000)
    small = Job("b", gpus=1, cpu=1, mem=1, gpu_mem=1000)
    first = needs(c, [big])
    calls = []
    real = res.server_gpu_mem
    monkeypatch.setattr(res, "server_gpu_mem", lambda s, o=None: calls.append(s) or real(s, o))
    assert needs(c, [big]) == first == {"gpu-memory"}
    assert needs(c, [small]) == set()
    assert calls == []
    assert needs(Cluster(servers), [big]) == first and len(calls) == len(servers)
