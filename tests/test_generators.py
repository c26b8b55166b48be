"""Seeded instance generators (alloc.experiments.generators) and the script
that writes their instances (bench/generate_scale.py)."""
import importlib.util
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from alloc.check import violations
from alloc.experiments.generators import GENERATORS, check_params, generate, get_generator
from alloc.io import instance_from_dict, instance_to_dict, load_instance
from alloc.model import MILLI, Allocation
from alloc.validate import validate_model

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"synergy": {"servers": 16}, "hetero": {"servers": 12}, "live": {"servers": 16},
         "openb": {"gpus": 300}}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_valid_deterministic_and_round_trips(name):
    inst = generate(name, 3, **SMALL[name])
    validate_model(inst.cluster, inst.jobs)
    doc = instance_to_dict(inst)
    back = instance_from_dict(doc)
    assert back.jobs == inst.jobs and back.cluster == inst.cluster
    assert instance_to_dict(generate(name, 3, **SMALL[name])) == doc
    assert instance_to_dict(generate(name, 4, **SMALL[name]))["jobs"] != doc["jobs"]
    assert doc["generator"]["seed"] == 3


def test_synergy_sizes_and_mix():
    inst = generate("synergy", 1, servers=1024)
    assert len(inst.cluster.servers) == 1024 and inst.cluster.total_gpus == 8192
    assert len(inst.jobs) == 8192
    share = Counter(j.gpus for j in inst.jobs)
    for g, p in ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05)):
        assert abs(share[g] / 8192 - p) < 0.02
    assert len({j.model for j in inst.jobs}) == 12
    assert all(j.cpu == 3000 * j.gpus and j.mem == 64000 * j.gpus for j in inst.jobs)
    assert all((j.locality == "server") == (j.gpus > 1) for j in inst.jobs)
    s = inst.cluster.servers[0]
    assert (s.cpu, s.mem, s.gpus, s.gpu_type) == (24000, 512000, 8, "V100")


def test_synergy_matches_the_shipped_instance():
    """The same draws as bench/generate.py: seed 16 on 16 servers is synergy-16x8."""
    shipped = load_instance(ROOT / "instances" / "synergy-16x8.json")
    made = generate("synergy", 16, servers=16)
    assert made.jobs == shipped.jobs and made.cluster == shipped.cluster


def test_hetero_thirds_and_restrictions():
    inst = generate("hetero", 2, servers=30, jobs=500)
    assert Counter(s.gpu_type for s in inst.cluster.servers) == {"V100": 10, "P100": 10,
                                                                  "K80": 10}
    restricted = [j for j in inst.jobs if j.gpu_types]
    assert len(restricted) == 100
    assert all(len(j.gpu_types) == 1 for j in restricted)
    assert {j.gpu_types[0] for j in restricted} == {"V100", "P100", "K80"}


def test_live_half_the_gpus_held_by_consistent_placements():
    inst = generate("live", 5, servers=64)
    running = [j for j in inst.jobs if j.current is not None]
    assert sum(j.gpus for j in running) == inst.cluster.total_gpus // 2
    assert 0 < len(running) < len(inst.jobs)
    used = Counter()
    cpu, mem = defaultdict(int), defaultdict(int)
    for j in running:
        p = j.current
        assert len(p.gpus) == j.gpus and len(p.cpu) == 1 and set(p.cpu) == set(p.mem)
        assert {g.gpu.split("/")[0] for g in p.gpus} == set(p.cpu)
        for g in p.gpus:
            used[g.gpu] += g.milli
        for s, v in p.cpu.items():
            cpu[s] += v
        for s, v in p.mem.items():
            mem[s] += v
    assert max(used.values()) <= MILLI
    for s in inst.cluster.servers:
        assert cpu[s.id] <= s.cpu and mem[s.id] <= s.mem
    a = Allocation(tuple(j.current for j in running),
                   tuple(j.id for j in inst.jobs if j.current is None))
    assert violations(inst.cluster, inst.jobs, a) == []


def test_openb_shape():
    inst = generate("openb", 1, gpus=6000)
    gpus = inst.cluster.total_gpus
    assert abs(gpus - 6000) < 60
    assert abs(len(inst.jobs) / gpus - 8152 / 6212) < 0.01
    shared = [j for j in inst.jobs if j.gpus == 1 and j.gpu_milli < MILLI]
    cpu_only = [j for j in inst.jobs if j.gpus == 0]
    multi = [j for j in inst.jobs if j.gpus > 1]
    assert abs(len(shared) / len(inst.jobs) - 0.378) < 0.03
    assert abs(len(cpu_only) / len(inst.jobs) - 0.133) < 0.03
    assert multi and all(j.locality == "server" for j in multi)
    assert max(j.cpu // max(j.gpus, 1) for j in inst.jobs if j.gpus) >= 16000  # CPU-heavy
    shapes = {(s.gpus, s.gpu_type) for s in inst.cluster.servers}
    assert len(shapes) >= 10
    demand = sum(j.gpus * j.gpu_milli for j in inst.jobs) / (MILLI * gpus)
    assert 0.9 < demand < 1.05  # the trace's 98 % of capacity


def test_openb_type_restrictions_and_cpu_nodes():
    inst = generate("openb", 2, gpus=300, gpu_spec=0.3, cpu_nodes=0.2)
    validate_model(inst.cluster, inst.jobs)
    gpu_jobs = [j for j in inst.jobs if j.gpus]
    frac = sum(1 for j in gpu_jobs if j.gpu_types) / len(gpu_jobs)
    assert 0.2 < frac < 0.4
    cpu_nodes = [s for s in inst.cluster.servers if s.gpus == 0]
    assert abs(len(cpu_nodes) / len(inst.cluster.servers) - 0.2) < 0.05


def test_largest_instance_is_fast():
    t0 = time.perf_counter()
    inst = generate("synergy", 1, servers=12500)
    assert len(inst.jobs) == 100_000 and inst.cluster.total_gpus == 100_000
    assert time.perf_counter() - t0 < 30


def test_bad_name_and_params():
    with pytest.raises(ValueError, match="valid generators: synergy, hetero, live, openb"):
        get_generator("synergi")
    with pytest.raises(ValueError, match="unknown parameter 'srvers'"):
        generate("synergy", 1, srvers=3)
    with pytest.raises(ValueError, match="'running': expected a value in 0..1"):
        check_params("live", {"running": 1.5})
    with pytest.raises(ValueError, match="'servers': expected int"):
        generate("synergy", 1, servers="many")
    with pytest.raises(ValueError, match="seed"):
        generate("synergy", -1)


def _script():
    spec = importlib.util.spec_from_file_location("generate_scale",
                                                  ROOT / "bench" / "generate_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generate_scale_script(tmp_path, capsys):
    mod = _script()
    out = tmp_path / "live.json"
    assert mod.main(["--kind", "live", "--servers", "8", "--seed", "2",
                     "--param", "running=0.25", "--out", str(out)]) == 0
    inst = load_instance(out)
    assert sum(j.gpus for j in inst.jobs if j.current) == 16
    assert mod.main(["--kind", "nope", "--out", str(out)]) == 2
    assert "valid generators" in capsys.readouterr().err
