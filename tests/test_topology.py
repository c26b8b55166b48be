"""The operator's graph: clusters built from a networkx tree or from levels
with each server's domains (the Kubernetes-label form) round-trip through
`hierarchy_graph`; bad graphs and bad levels are named in one line; required
placement at any level never spans two domains and preferred placement never
spans several when one holds the job (every solver that declares it, on
drawn instances of any depth and names); HiveD's cells and span factors at
any level; instance files with domains and preferred levels through the
command line."""
import json
import warnings

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc import (Cell, Cluster, InputError, Job, Profile, Server, Tenant, allocate,
                   load_instance, violations)
from alloc.arrays import cluster_arrays
from alloc.cli import main
from alloc.model import frozen_map
from alloc.registry import solvers
from alloc.testing.strategies import clusters, instances
from alloc.testing.topology import preferred_problems, required_problems
from alloc.topology import (climb, domain_names, hierarchy_graph, job_climb, span_level)

# ------------------------------------------------------------------ helpers
NAMES = st.sampled_from(["zone", "block", "rack", "nvl72", "leaf", "pod"])


@st.composite
def trees(draw):
    """A random hierarchy graph: 0-3 levels above the servers, each node
    with 1-3 children, servers with their fields, GPU leaves or not."""
    outer = draw(st.lists(NAMES, max_size=3, unique=True))
    gpu_leaves = draw(st.booleans())
    sockets = draw(st.sampled_from([1, 2])) if gpu_leaves else 1
    g = nx.DiGraph()
    g.add_node("cluster", level="cluster")
    count = [0]

    def grow(parent, depth):
        for _ in range(draw(st.integers(1, 3))):
            count[0] += 1
            if depth < len(outer):
                name = f"{outer[depth]}-{count[0]}"
                g.add_node(name, level=outer[depth])
                g.add_edge(parent, name)
                grow(name, depth + 1)
                continue
            sid = f"s{count[0]}"
            gpus = draw(st.sampled_from([0, 2, 4, 8]))
            attrs = {"level": "server", "cpu": 16000, "mem": 65536, "gpus": gpus}
            if gpus:
                attrs["gpu_type"] = draw(st.sampled_from(["H100", "A100"]))
            if gpus and gpu_leaves and sockets > 1:
                attrs["sockets"] = sockets
            g.add_node(sid, **attrs)
            g.add_edge(parent, sid)
            if gpus and gpu_leaves:
                for k in range(gpus):
                    up = sid
                    if sockets > 1:
                        up = f"{sid}/socket{k // (gpus // sockets)}"
                        if up not in g:
                            g.add_node(up, level="socket")
                            g.add_edge(sid, up)
                    g.add_node(f"{sid}/gpu{k}", level="gpu", server=sid, gpu_type=attrs["gpu_type"],
                               milli=1000)
                    g.add_edge(up, f"{sid}/gpu{k}")
    grow("cluster", 0)
    return g


def same_graph(a, b) -> bool:
    return dict(a.nodes(data=True)) == dict(b.nodes(data=True)) and set(a.edges) == set(b.edges)


def four_level(blocks=2, racks=2, per=2, gpus=8) -> Cluster:
    servers = []
    for z in range(2):
        for b in range(blocks):
            for r in range(racks):
                for i in range(per):
                    servers.append(Server(f"z{z}b{b}r{r}s{i}", 64000, 512000, gpus, "H100",
                                          domains={"zone": f"z{z}", "block": f"b{b}",
                                                   "rack": f"r{r}"}))
    return Cluster(tuple(servers), levels=("zone", "block", "rack", "server", "gpu"))


# --------------------------------------------------------------- round trip
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_graph_round_trip(g):
    c = Cluster.from_graph(g)
    if any(s.gpus for s in c.servers) or "gpu" not in c.levels:
        assert same_graph(hierarchy_graph(c), g)
    assert Cluster.from_graph(hierarchy_graph(c)) == c


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(max_servers=6))
def test_levels_form_round_trips_through_the_graph(c):
    again = Cluster.from_graph(hierarchy_graph(c))
    assert again.levels == c.levels or not any(s.gpus for s in c.servers)
    assert [s.id for s in again.servers] == [s.id for s in c.servers]
    assert [(s.cpu, s.mem, s.gpus, s.gpu_type, s.sockets, s.switches_per_socket, s.gpu_mem)
            for s in again.servers] == [(s.cpu, s.mem, s.gpus, s.gpu_type, s.sockets,
                                         s.switches_per_socket, s.gpu_mem) for s in c.servers]
    a, b = cluster_arrays(c).srv_domain, cluster_arrays(again).srv_domain
    assert a.keys() == b.keys()
    for lv in a:
        assert (a[lv] == b[lv]).all()      # the same domains (numbered by first server)
    assert same_graph(hierarchy_graph(again), hierarchy_graph(c))


def test_kubernetes_label_form_is_the_graph_form():
    c = four_level()
    g = hierarchy_graph(c)
    assert {d["level"] for _, d in g.nodes(data=True)} == {"cluster", "zone", "block", "rack",
                                                            "server", "gpu"}
    assert Cluster.from_graph(g) != c          # domain ids repeat across parents: qualified
    assert domain_names(c)["rack"][:2] == ["z0/b0/r0", "z0/b0/r1"]
    c2 = Cluster.from_graph(g)
    assert same_graph(hierarchy_graph(c2), g)


def test_equal_names_under_different_parents_are_different_domains():
    c = four_level(per=1, gpus=4)
    # z0/b0/r0 and z1/b0/r0 share every id but the zone's: two racks
    assert len(set(cluster_arrays(c).srv_domain["rack"].tolist())) == 8
    job = Job("j", 8, cpu=1000, mem=1000, locality="rack")
    a = allocate(c, [job], solver="best-fit")
    assert a.unplaced == ("j",) and "rack" in a.reasons["j"]
    job2 = Job("k", 8, cpu=1000, mem=1000, locality="block")
    a = allocate(c, [job2], solver="best-fit")
    assert not violations(c, [job2], a) and len(a.placements) == 1


def test_nvl72_from_a_graph():
    g = nx.DiGraph()
    g.add_node("dc", level="cluster")
    for d in range(2):
        g.add_node(f"nvl{d}", level="nvl72")
        g.add_edge("dc", f"nvl{d}")
        for t in range(18):
            g.add_node(f"nvl{d}-t{t}", level="server", cpu=72000, mem=480000, gpus=4,
                       gpu_type="GB200")
            g.add_edge(f"nvl{d}", f"nvl{d}-t{t}")
    c = Cluster.from_graph(g)
    assert c.levels == ("nvl72", "server") and c.total_gpus == 144
    jobs = [Job("big", 72, cpu=72000, mem=72000, locality="nvl72"),
            Job("two", 8, cpu=8000, mem=8000, locality="nvl72")]
    a = allocate(c, jobs, solver="best-fit")
    assert len(a.placements) == 2 and not violations(c, jobs, a)
    assert span_level(c, [x.gpu for x in a.placement("big").gpus]) == "nvl72"


# ---------------------------------------------------------------- bad input
def _g(*edges, **levels):
    g = nx.DiGraph(list(edges))
    for n in g:
        lv = levels.get(n, "server" if n.startswith("s") else "cluster" if n == "c" else "rack")
        g.nodes[n]["level"] = lv
        if lv == "server":
            g.nodes[n].update(cpu=8000, mem=8000, gpus=2, gpu_type="V100")
    return g


@pytest.mark.parametrize("graph, expect", [
    (_g(("c", "r0"), ("c", "r1"), ("r0", "s0"), ("r1", "s0")),
     "node 's0' has two parents, 'r0' and 'r1': not a tree"),
    (_g(("c", "r0"), ("r0", "s0"), ("x", "s1")), "nodes 'c' and 'x' have no parent"),
    (_g(("c", "r0"), ("r0", "s0"), ("r0", "r9"), r9="block"),
     "node 'r9': a leaf must be a server or a GPU"),
    (_g(("c", "r0"), ("r0", "b0"), ("b0", "s0"), b0="rack"),
     "node 'b0': level 'rack' twice on one path (also at 'r0')"),
    (_g(("c", "r0"), ("r0", "s0"), ("c", "s1")), "node 's1': the levels above it [] differ"),
    (_g(("c", "s0"), ("s0", "x")), "node 'x': level 'rack' below server 's0'"),
    (_g(("c", "a"), ("a", "b"), ("b", "a"), ("c", "s0"), a="rack", b="block"),
     "node 'a' has two parents"),
])
def test_bad_graphs_are_named(graph, expect):
    with pytest.raises(InputError) as err:
        Cluster.from_graph(graph)
    assert expect in str(err.value) and "\n" not in str(err.value)


def test_a_server_in_two_domains_of_one_level():
    g = _g(("c", "r0"), ("r0", "s0"))
    g.nodes["s0"]["rack"] = "r7"
    with pytest.raises(InputError, match="a server in two domains of one level"):
        Cluster.from_graph(g)


def test_a_cycle_is_not_a_tree():
    g = _g(("c", "s0"), ("a", "b"), ("b", "a"), a="rack", b="block")
    with pytest.raises(InputError, match="not a tree"):
        Cluster.from_graph(g)


@pytest.mark.parametrize("levels, domains, expect", [
    (("rack", "server", "rack", "gpu"), {}, "level 'rack' listed twice"),
    (("server", "zone", "gpu"), {}, "after 'server' expected some of"),
    (("socket", "server", "gpu"), {}, "level 'socket' is inside a server"),
    (("zone", "server", "gpu"), {"zone": "z", "pod": "p"}, "level 'pod' is not a level"),
    (("zone", "block", "server", "gpu"), {"zone": "z"}, "its domain at level 'block'"),
    (("cluster", "server", "gpu"), {}, "'cluster' names the root"),
])
def test_bad_levels_are_named(levels, domains, expect):
    c = Cluster((Server("s0", 8000, 8000, 2, "V100", domains=domains),), levels=levels)
    with pytest.raises(InputError) as err:
        allocate(c, [Job("j", 1, cpu=100, mem=100)], solver="best-fit")
    assert expect in str(err.value)


def test_rack_and_domains_rack_must_agree():
    s = Server("s0", 8000, 8000, 2, "V100", rack="r1", domains={"rack": "r2"})
    with pytest.raises(InputError, match="rack: 'r1' differs from domains.rack 'r2'"):
        allocate(Cluster((s,), levels=("rack", "server", "gpu")), [], solver="best-fit")
    assert Server("s1", 1, 1, rack="r1") == Server("s1", 1, 1, domains={"rack": "r1"})


@pytest.mark.parametrize("field", ["locality", "preferred"])
def test_a_job_asking_for_a_level_the_cluster_lacks(field):
    c = four_level(per=1)
    with pytest.raises(InputError, match=f"jobs\\[0\\].{field}: level 'nvl72' is not in"):
        allocate(c, [Job("j", 2, cpu=1, mem=1, **{field: "nvl72"})], solver="best-fit")


# ------------------------------------------------------------ placement rules
PREFERRED = sorted(n for n, s in solvers().items() if "preferred" in s.capabilities and
                   s.available)


def test_every_preferred_solver_is_listed():
    assert {"best-fit", "proportional", "greedy-upgrade", "local-search", "cpsat", "milp",
            "kueue-tas", "slurm-topology"} <= set(PREFERRED)


@pytest.mark.parametrize("name", PREFERRED)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_required_and_preferred_properties(name, data):
    caps = solvers()[name].capabilities
    cluster, jobs = data.draw(instances(max_servers=6, max_jobs=8, capabilities=caps,
                                        running=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = allocate(cluster, jobs, solver=name, time_limit=2)
    assert not violations(cluster, jobs, a)
    assert not required_problems(cluster, jobs, a)
    assert not preferred_problems(cluster, jobs, a, "throughput")


def test_preferred_uses_one_domain_when_one_holds_it():
    c = four_level()
    # rack z0/b0/r0 is half used: the 16-GPU job preferring a rack must not split
    first = Job("first", 8, cpu=1000, mem=1000)
    jobs = [first, Job("pref", 16, cpu=1000, mem=1000, preferred="rack")]
    for name in PREFERRED:
        a = allocate(c, jobs, solver=name, time_limit=5)
        p = a.placement("pref")
        assert p is not None and job_climb(c, jobs[1], [g.gpu for g in p.gpus]) == 0, name


def test_a_preferred_job_climbs_the_fewest_levels():
    c = four_level()                          # racks of 16 GPUs, blocks of 32, zones of 64
    job = Job("pref", 48, cpu=1000, mem=1000, preferred="rack")
    for name in PREFERRED:
        a = allocate(c, [job], solver=name, time_limit=3)
        gpus = [g.gpu for g in a.placement("pref").gpus]
        assert span_level(c, gpus) == "zone" and job_climb(c, job, gpus) == 2, name


def test_climb_counts_levels_above_the_preferred_one():
    c = four_level(per=1)
    assert climb(c, "rack", "server") == 0 and climb(c, "rack", "rack") == 0
    assert climb(c, "rack", "block") == 1 and climb(c, "rack", "cluster") == 3
    inner = Cluster((Server("s0", 8000, 8000, 8, "V100", sockets=2),),
                    levels=("server", "socket", "gpu"))
    assert climb(inner, "socket", "server") == 1 and climb(inner, "socket", "socket") == 0


def test_a_waiting_gang_names_the_most_one_domain_of_its_level_holds():
    """The waiting reason of a gang required within one block counts the
    usable GPUs per block, not per cluster."""
    from alloc.problem import compile_problem
    from alloc.waiting import waiting_reasons
    c = four_level()                      # 4 blocks of 32 GPUs
    jobs = [Job(f"f{i}", 16, cpu=1000, mem=1000) for i in range(4)] + \
        [Job("g", 24, cpu=1000, mem=1000, locality="block")]
    p = compile_problem(c, jobs)
    a = {i: p.make_assign(i, list(range(32 * i, 32 * i + 16)), 0) for i in range(4)}
    why = waiting_reasons(p, a, {"spread"})[4]
    assert why.endswith("spread over servers, one block has 16 usable"), why


def test_span_factors_at_any_level():
    c = four_level(per=1, gpus=8)
    prof = Profile("p", span=frozen_map({"rack": 1.0, "block": 0.8, "zone": 0.6,
                                         "cluster": 0.4}))
    job = Job("j", 16, cpu=1600, mem=1600, model="p", profile=prof, locality="block")
    a = allocate(c, [job], solver="cpsat", time_limit=5)
    assert a.placements[0].throughput == pytest.approx(0.8)
    assert a.status.value == "optimal"


def test_hived_cells_at_any_level():
    base = four_level(per=2, gpus=8)
    tenants = {"vc": Tenant("vc", (Cell("block", 1),)), "other": Tenant("other", (Cell("rack", 1),))}
    c = Cluster(base.servers, base.levels, frozen_map(tenants))
    jobs = [Job(f"g{k}", 8, cpu=1000, mem=1000, tenant="vc", guaranteed=True) for k in range(4)]
    jobs += [Job("o", 16, cpu=1000, mem=1000, tenant="other", guaranteed=True)]
    for name in ("hived", "cpsat-tenancy"):
        a = allocate(c, jobs, solver=name, time_limit=10)
        assert not violations(c, jobs, a) and len(a.placements) == 5, name
        blocks = {cluster_arrays(c).srv_domain["block"][c.server_index[s]]
                  for p in a.placements if p.job.startswith("g") for s in p.cpu}
        assert len(blocks) == 1, name         # the tenant's one block cell holds its jobs


def test_exact_admits_at_least_the_baselines():
    c = four_level(per=2, gpus=8)
    sizes = [24, 16, 8, 40, 8, 16, 4, 12, 32, 8]
    jobs = [Job(f"j{k}", g, cpu=1000, mem=1000, locality="block" if g > 16 else "rack"
                if g > 8 else None) for k, g in enumerate(sizes)]
    got = {n: len(allocate(c, jobs, solver=n, objective="jobs", time_limit=10).placements)
           for n in ("kueue-tas", "slurm-topology", "cpsat")}
    assert got["cpsat"] >= max(got["kueue-tas"], got["slurm-topology"])


# ------------------------------------------------------------------- files
DOC = {"format": "alloc.instance/1", "name": "four-level",
       "cluster": {"levels": ["zone", "block", "rack", "server", "gpu"], "servers": [
           {"id": f"s{i}", "rack": f"r{i // 2}", "domains": {"zone": "z0", "block": f"b{i // 4}"},
            "cpu": 64000, "mem": 512000, "gpus": 8, "gpu_type": "H100"} for i in range(8)]},
       "jobs": [{"id": "a", "gpus": 16, "cpu": 16000, "mem": 16000, "locality": "rack"},
                {"id": "b", "gpus": 24, "cpu": 16000, "mem": 16000, "preferred": "block"},
                {"id": "c", "gpus": 8, "cpu": 8000, "mem": 8000, "preferred": "rack"}]}


def test_instance_file_with_domains_through_the_cli(tmp_path, capsys):
    f = tmp_path / "inst.json"
    f.write_text(json.dumps(DOC))
    inst = load_instance(f)
    assert inst.cluster.servers[3].domains == {"zone": "z0", "block": "b0", "rack": "r1"}
    assert inst.jobs[1].preferred == "block"
    out = tmp_path / "out.json"
    assert main(["validate", str(f)]) == 0
    assert main(["solve", str(f), "--solver", "cpsat", "--out", str(out)]) == 0
    assert main(["check", str(f), str(out)]) == 0
    from alloc import instance_to_dict
    d = instance_to_dict(inst)
    assert d["cluster"]["servers"][3]["domains"] == {"zone": "z0", "block": "b0"}
    assert d["cluster"]["servers"][3]["rack"] == "r1" and d["jobs"][1]["preferred"] == "block"


@pytest.mark.parametrize("change, expect", [
    (lambda d: d["jobs"][0].update(locality="pod"), "jobs[0].locality: level 'pod' is not in"),
    (lambda d: d["jobs"][1].update(preferred="pod"), "jobs[1].preferred: level 'pod' is not in"),
    (lambda d: d["cluster"]["servers"][0]["domains"].pop("block"),
     "cluster.servers[0].domains: expected its domain at level 'block'"),
    (lambda d: d["cluster"].update(levels=["zone", "zone", "server", "gpu"]),
     "cluster.levels"),
    (lambda d: d["cluster"]["servers"][0].update(domains={"zone": 3}),
     "cluster.servers[0].domains.zone: expected string"),
])
def test_bad_instance_files_exit_2(tmp_path, capsys, change, expect):
    doc = json.loads(json.dumps(DOC))
    change(doc)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    assert main(["validate", str(f)]) == 2
    got = capsys.readouterr()
    assert expect in got.out + got.err and "Traceback" not in got.out + got.err
    assert main(["solve", str(f), "--solver", "best-fit"]) == 2
    err = capsys.readouterr().err
    assert expect in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("mode_domains, relax", [(1, 8), (32, 1)])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_coarse_and_relaxed_models_keep_the_rules(monkeypatch, mode_domains, relax, data):
    """The configuration model with one mode per job (many domains) or a
    locality's units pooled (large domains): answers valid, bounds above."""
    from alloc.engines.configuration import aggregate
    monkeypatch.setattr(aggregate, "MODE_DOMAINS", mode_domains)
    monkeypatch.setattr(aggregate, "RELAX_FACTOR", relax)
    caps = solvers()["cpsat"].capabilities - {"tenancy", "elastic"}
    cluster, jobs = data.draw(instances(max_servers=6, max_jobs=8, capabilities=caps,
                                        running=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = allocate(cluster, jobs, solver="cpsat", time_limit=3)
    assert not violations(cluster, jobs, a)
    assert not preferred_problems(cluster, jobs, a, "throughput")
    assert a.bound is None or a.value <= a.bound + 1e-6 * max(1.0, abs(a.bound))


def test_sessions_and_the_service_take_domains_and_preferred():
    from alloc import Session
    c = four_level(per=1)
    s = Session(c, solver="best-fit")
    s.apply([{"type": "submit", "job": {"id": "p", "gpus": 16, "cpu": 1000, "mem": 1000,
                                        "preferred": "rack"}},
             {"type": "add_server", "server": {"id": "extra", "cpu": 64000, "mem": 512000,
                                               "gpus": 8, "gpu_type": "H100",
                                               "domains": {"zone": "z0", "block": "b0",
                                                           "rack": "r0"}}}])
    assert s.jobs["p"].preferred == "rack"
    res = s.step()
    p = res.allocation.placement("p")
    assert p is not None and job_climb(s.cluster, s.jobs["p"], [g.gpu for g in p.gpus]) == 0
    assert s.cluster.server("extra").domains["rack"] == "r0"


def test_the_service_takes_both_forms():
    pytest.importorskip("fastapi", reason="the service extra is not installed")
    from fastapi.testclient import TestClient
    from alloc import instance_to_dict
    from alloc.model import Instance
    from alloc.service import create_app
    client = TestClient(create_app())
    r = client.post("/v1/solve", json={"instance": DOC, "solver": "best-fit", "time_limit": 5})
    assert r.status_code == 200 and not r.json()["unplaced"]
    # a cluster built from a graph, sent as a file
    g = hierarchy_graph(load_instance_from(DOC).cluster)
    c = Cluster.from_graph(g)
    doc = instance_to_dict(Instance("from-graph", c, load_instance_from(DOC).jobs))
    r = client.post("/v1/solve", json={"instance": doc, "solver": "kueue-tas", "time_limit": 5})
    assert r.status_code == 200 and not r.json()["unplaced"]
    bad = json.loads(json.dumps(DOC))
    bad["jobs"][0]["locality"] = "pod"
    r = client.post("/v1/solve", json={"instance": bad, "solver": "best-fit"})
    assert r.status_code == 400 and "jobs[0].locality: level 'pod'" in r.json()["error"]


def load_instance_from(doc):
    from alloc.io import instance_from_dict
    return instance_from_dict(json.loads(json.dumps(doc)), "doc")
