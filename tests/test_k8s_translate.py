"""Kubernetes objects into alloc's servers and jobs: the pure part (no API server)."""
from __future__ import annotations

import pytest

from alloc.adapters.kubernetes import quantity
from alloc.adapters.kubernetes.translate import (GPU_PRODUCT, GPU_RESOURCE, Levels, gang_problem,
                                                 has_domains, job_for, node_closed, node_server,
                                                 parse_levels, pod_view, split_gang)
from alloc.model import GpuShare, Placement

LEVELS = Levels((("zone", "topology.kubernetes.io/zone"), ("rack", "example.com/rack")))


def _node(name="n1", gpus="8", product="A100", ready="True", cordon=False, **labels):
    return {"metadata": {"name": name, "labels": {GPU_PRODUCT: product, **labels}},
            "spec": {"unschedulable": cordon},
            "status": {"allocatable": {"cpu": "31500m", "memory": "100Gi", GPU_RESOURCE: gpus},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def _pod(name="p", *, res=None, ann=None, labels=None, spec=None, init=None):
    s = {"schedulerName": "alloc", "priority": 7,
         "containers": [{"resources": res or {"limits": {GPU_RESOURCE: "1", "cpu": "2",
                                                         "memory": "1Gi"}}}]}
    if init:
        s["initContainers"] = init
    s.update(spec or {})
    return {"metadata": {"name": name, "namespace": "ns", "uid": "u-" + name,
                         "annotations": ann or {}, "labels": labels or {}}, "spec": s}


def test_quantities_in_alloc_units():
    assert quantity.milli_cpu("31500m") == 31500 and quantity.milli_cpu("0.1") == 100
    assert quantity.mib("100Gi", capacity=True) == 102400 and quantity.mib("1500Ki") == 2
    assert quantity.count("8") == 8
    for bad in ("8x", "", "1.5.2", True):
        with pytest.raises(ValueError):
            quantity.parse(bad, "q")
    with pytest.raises(ValueError, match="whole number"):
        quantity.count("1.5", "gpus")


def test_a_node_is_a_server_with_its_type_and_levels():
    s = node_server(_node(**{"example.com/rack": "r7", "topology.kubernetes.io/zone": "z1"}), LEVELS)
    assert (s.id, s.cpu, s.mem, s.gpus, s.gpu_type) == ("n1", 31500, 102400, 8, "A100")
    if has_domains():
        assert s.domains["rack"] == "r7" and s.domains["zone"] == "z1"
    else:
        assert s.rack == "r7"
    assert node_closed(_node()) is None
    assert node_closed(_node(cordon=True)) == "cordoned"
    assert node_closed(_node(ready="False")) == "NotReady"
    assert node_closed({"metadata": {"name": "x"}}) == "NotReady"


def test_a_pod_is_read_with_its_requests_type_priority_and_topology():
    v = pod_view(_pod(ann={"kueue.x-k8s.io/podset-required-topology": "example.com/rack"},
                      spec={"nodeSelector": {GPU_PRODUCT: "H100"}},
                      init=[{"resources": {"requests": {"cpu": "8"}}}]), LEVELS)
    assert v.problem is None
    assert (v.gpus, v.cpu, v.mem, v.gpu_types, v.priority, v.required) == \
        (1, 8000, 1024, ("H100",), 7, "rack")


def test_affinity_gives_the_allowed_types():
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": GPU_PRODUCT, "operator": "In", "values": ["A100"]}]},
            {"matchExpressions": [{"key": GPU_PRODUCT, "operator": "In", "values": ["H100"]}]}]}}}
    v = pod_view(_pod(spec={"affinity": aff}), LEVELS)
    assert v.gpu_types == ("A100", "H100") and v.problem is None


@pytest.mark.parametrize("ann, spec, needle", [
    ({"alloc.io/gpu-milli": "-100"}, {}, "negative"),
    ({"alloc.io/gpu-milli": "1500"}, {}, "1..1000"),
    ({"kueue.x-k8s.io/podset-required-topology": "rack!"}, {}, "podset-required-topology"),
    ({"alloc.io/min-member": "zero"}, {}, "min-member"),
    ({}, {"nodeSelector": {"disk": "ssd"}}, "nodeSelector"),
])
def test_bad_input_is_one_line_on_the_pod(ann, spec, needle):
    v = pod_view(_pod(ann=ann, spec=spec), LEVELS)
    assert v.problem and needle in v.problem and "ns/p" in v.problem
    assert "\n" not in v.problem


def test_a_negative_quantity_is_bad_input():
    v = pod_view(_pod(res={"requests": {"cpu": "-1"}}), LEVELS)
    assert v.problem and "negative" in v.problem


def test_shared_gpu_pod():
    v = pod_view(_pod(res={"requests": {"cpu": "1"}}, ann={"alloc.io/gpu-milli": "250"}), LEVELS)
    j = job_for(v.key, [v])
    assert (j.gpus, j.gpu_milli, v.problem) == (1, 250, None)


def test_a_gang_is_one_job_of_its_pods_sum():
    pods = [pod_view(_pod(f"p{i}", res={"limits": {GPU_RESOURCE: "2", "cpu": "4", "memory": "2Gi"}},
                          ann={"kueue.x-k8s.io/podset-required-topology": "rack"}), LEVELS)
            for i in range(3)]
    j = job_for("ns/g", pods)
    assert (j.gpus, j.cpu, j.mem, j.locality, j.priority) == (6, 12000, 6144, "rack", 7)
    assert gang_problem(pods, "g") is None
    other = pod_view(_pod("q", spec={"nodeSelector": {GPU_PRODUCT: "H100"}}), LEVELS)
    assert "GPU types" in gang_problem(pods + [other], "g")
    one = pod_view(_pod("big", res={"limits": {GPU_RESOURCE: "4"}}), LEVELS)
    assert job_for("ns/big", [one]).locality == "server"


def test_a_gang_placement_splits_into_whole_pods_or_not_at_all():
    pods = [pod_view(_pod(f"p{i}", res={"limits": {GPU_RESOURCE: "2", "cpu": "4", "memory": "2Gi"}}),
                     LEVELS) for i in range(3)]
    p = Placement("ns/g", tuple(GpuShare(g, 1000) for g in
                                ("a/gpu0", "a/gpu1", "a/gpu2", "a/gpu3", "b/gpu5", "b/gpu6")),
                  {"a": 8000, "b": 4000}, {"a": 4096, "b": 2048})
    plan = split_gang(p, pods, {"a": (8000, 4096), "b": (4000, 2048)})
    assert sorted(v[0] for v in plan.values()) == ["a", "a", "b"]
    assert sorted(k for v in plan.values() for k in v[1]) == [0, 1, 2, 3, 5, 6]
    odd = Placement("ns/g", tuple(GpuShare(g, 1000) for g in
                                  ("a/gpu0", "a/gpu1", "a/gpu2", "b/gpu0", "b/gpu1", "b/gpu2")),
                    {"a": 6000, "b": 6000}, {"a": 3072, "b": 3072})
    assert split_gang(odd, pods, {"a": (99000, 9999), "b": (99000, 9999)}) is None
    # the pods must fit the room the other jobs leave
    assert split_gang(p, pods, {"a": (7000, 4096), "b": (4000, 2048)}) is None


def test_levels_from_the_command_line():
    lv = parse_levels(["zone=topology.kubernetes.io/zone", "rack=example.com/rack"])
    assert lv.level_of("example.com/rack") == "rack" and lv.level_of("kubernetes.io/hostname") == "server"
    for bad in (["zone"], ["server=x"], ["a=b", "a=c"]):
        with pytest.raises(ValueError):
            parse_levels(bad)
