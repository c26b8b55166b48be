"""Model, topology, profiles, objectives and the compile step."""
import pytest
from hypothesis import given, strategies as st

from alloc import Cluster, InputError, Job, Server, load_profile
from alloc.model import CLUSTER
from alloc.objectives import span_level, throughput
from alloc.problem import compile_problem, pareto_options, split
from alloc.profiles import available_models, profile_from_dict
from alloc.topology import gpus_under, hierarchy_graph, nodes_at

DEEP = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100", rack=f"r{i // 2}", sockets=2,
                            switches_per_socket=2) for i in range(4)),
               levels=("rack", "server", "socket", "switch", "gpu"))


def test_hierarchy_graph_shape():
    g = hierarchy_graph(DEEP)
    assert len(nodes_at(g, "rack")) == 2
    assert len(nodes_at(g, "server")) == 4
    assert len(nodes_at(g, "socket")) == 8
    assert len(nodes_at(g, "switch")) == 16
    assert len(nodes_at(g, "gpu")) == 32
    assert gpus_under(g, "s1/socket1") == [f"s1/gpu{k}" for k in range(4, 8)]
    assert gpus_under(g, "s0/socket0/switch1") == ["s0/gpu2", "s0/gpu3"]
    assert g.nodes["s0/gpu0"]["milli"] == 1000


@pytest.mark.parametrize("gpus, level", [
    (["s0/gpu0"], "gpu"), (["s0/gpu0", "s0/gpu1"], "switch"), (["s0/gpu0", "s0/gpu3"], "socket"),
    (["s0/gpu0", "s0/gpu7"], "server"), (["s0/gpu0", "s1/gpu0"], "rack"),
    (["s0/gpu0", "s2/gpu0"], CLUSTER)])
def test_span_level(gpus, level):
    assert span_level(DEEP, gpus) == level


def test_all_models_load_and_are_normalised():
    names = available_models()
    assert len(names) >= 12
    for n in names:
        p = load_profile(n)
        assert p.grid_value(3000, 64000) == pytest.approx(1.0), n  # proportional share
        assert p.speed("V100") == 1.0


def test_bad_model_document():
    with pytest.raises(InputError, match="m.json: tput: expected a 2 x 1 grid"):
        profile_from_dict({"cpu_per_gpu": [1, 2], "mem_per_gpu": [1], "tput": [[1.0]]},
                          source="m.json")
    with pytest.raises(InputError, match="unknown key 'foo'"):
        profile_from_dict({"foo": 1}, source="m.json")


def test_throughput_factors():
    prof = load_profile("res18")
    j = Job("x", gpus=2, cpu=6000, mem=128000, model="res18", profile=prof)
    same = throughput(DEEP, j, ["s0/gpu0", "s0/gpu1"], 6000, 128000)
    spread = throughput(DEEP, j, ["s0/gpu0", "s2/gpu0"], 6000, 128000)
    assert same == pytest.approx(1.0)
    assert spread == pytest.approx(prof.span_factor("cluster"))
    boosted = throughput(DEEP, j, ["s0/gpu0", "s0/gpu1"], 18000, 128000)
    assert boosted == pytest.approx(prof.grid_value(9000, 64000))
    assert boosted > 2


@given(st.integers(0, 10 ** 6), st.lists(st.integers(0, 8), min_size=1, max_size=6))
def test_split_sums_and_is_proportional(total, counts):
    parts = split(total, counts)
    assert sum(parts) == total and len(parts) == len(counts)
    n = sum(counts)
    if n:
        for p, c in zip(parts, counts):
            assert abs(p - total * c / n) < 1


def test_pareto_options_drop_dominated_points():
    j = Job("x", gpus=1, cpu=3000, mem=64000, model="alexnet", profile=load_profile("alexnet"))
    opts = pareto_options(j)
    assert opts[0].request and opts[0].base == pytest.approx(1.0)
    for a in opts[1:]:
        for b in opts:
            if a is not b:
                assert not (b.cpu <= a.cpu and b.mem <= a.mem and b.base >= a.base)
    assert max(o.base for o in opts) == pytest.approx(2.94)
    # language models gain nothing from CPU: only cheaper points survive
    bert = Job("y", gpus=1, cpu=3000, mem=64000, model="bert", profile=load_profile("bert"))
    assert all(o.cpu <= 3000 for o in pareto_options(bert))


def test_problem_classes_group_identical_servers():
    p = compile_problem(DEEP, [Job("a", gpus=1, cpu=1, mem=1)])
    assert sorted(map(len, p.classes)) == [2, 2]  # two racks of two identical servers
    assert p.G == 32 and p.domain["socket"][4] != p.domain["socket"][3]
