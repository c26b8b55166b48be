"""The scheduler's cycle against an API stand-in: order, preemption, the command line."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from alloc.adapters.kubernetes.scheduler import Scheduler
from alloc.errors import InputError
from test_k8s_faults_unit import FakeApi, _node, _pod

ROOT = Path(__file__).resolve().parents[1]


def _bound(name, node, gpus, priority):
    p = _pod(name, gpus)
    p["spec"].update(nodeName=node, priority=priority)
    p["metadata"]["annotations"] = {"alloc.io/gpus": ",".join(map(str, range(gpus)))}
    return p


@pytest.mark.parametrize("order, preempts", [("priority", True), ("fifo", False)])
def test_a_higher_priority_pod_preempts_under_the_priority_order(order, preempts):
    high = _pod("high", 8)
    high["spec"]["priority"] = 1000
    api = FakeApi([_node("n0")], [_bound("low", "n0", 8, 0), high])
    deleted = []
    api.delete_pod = lambda ns, name, uid, grace=None: deleted.append(name)
    dec = io.StringIO()
    s = Scheduler(api, order=order, decisions=dec, log=io.StringIO(), events=False)
    s.relist()
    c = s.cycle()
    s.close()
    lines = [json.loads(x) for x in dec.getvalue().splitlines()]
    if preempts:
        assert deleted == ["low"] and c.preempted == ("ns/low",)
        assert lines[0]["action"] == "preempt" and lines[0]["for"] == "ns/high"
        assert c.bound == ()           # it starts once the preempted pod is gone
        assert "preempted pod" in c.reasons["ns/high"] or "preempted" in c.reasons["ns/high"]
    else:
        assert deleted == [] and not lines and "ns/high" in c.waiting


def test_equal_priority_never_preempts():
    api = FakeApi([_node("n0")], [_bound("old", "n0", 8, 5), _pod("new", 8)])
    api.pods[1]["spec"]["priority"] = 5
    s = Scheduler(api, log=io.StringIO(), events=False)
    s.relist()
    c = s.cycle()
    s.close()
    assert c.preempted == () and "ns/new" in c.waiting


def test_bad_settings_are_input_errors():
    with pytest.raises(InputError, match="order: order policy 'las' needs attained"):
        Scheduler(FakeApi(), order="las", log=io.StringIO())
    with pytest.raises(InputError, match="order: unknown order policy 'nope'"):
        Scheduler(FakeApi(), order="nope", log=io.StringIO())


def test_the_order_comes_from_the_registry():
    """An order registered at run time ranks the pods: the newest first,
    preemptive, so the new pod preempts the running one (priorities equal)."""
    from alloc.sched import KeyOrder, policy, register_policy, unregister_policy

    @policy("order", "k8s-test-newest", summary="the newest first")
    class Newest(KeyOrder):
        preemptive = True

        def key(self, job, ctx):
            return -job.arrival_s

    register_policy(Newest)
    try:
        api = FakeApi([_node("n0")], [_bound("old", "n0", 8, 5), _pod("new", 8)])
        api.pods[1]["spec"]["priority"] = 5
        api.pods[1]["metadata"]["creationTimestamp"] = "2999-01-01T00:00:00Z"
        deleted = []
        api.delete_pod = lambda ns, name, uid, grace=None: deleted.append(name)
        s = Scheduler(api, order="k8s-test-newest", log=io.StringIO(), events=False)
        s.relist()
        c = s.cycle()
        s.close()
        assert deleted == ["old"] and c.preempted == ("ns/old",)
        s = Scheduler(api, order="fifo:preemptive=true", log=io.StringIO(), events=False)
        assert s._policy.preemptive
    finally:
        unregister_policy("order", "k8s-test-newest")
    with pytest.raises(InputError, match="preempt"):
        Scheduler(FakeApi(), preempt="always", log=io.StringIO())


@pytest.mark.parametrize("args, needle", [
    (["--level", "zone"], "NAME=LABEL"),
    (["--kubeconfig", "/nonexistent/kubeconfig"], "--kubeconfig"),
    (["--cycles", "0", "--interval", "1"], "--cycles"),
])
def test_the_command_line_says_what_is_wrong_in_one_line(args, needle, tmp_path):
    pytest.importorskip("kubernetes")
    p = subprocess.run([sys.executable, "-m", "alloc", "k8s", "run", *args], cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def _labelled(i):
    n = _node(f"n{i}")
    n["metadata"]["labels"].update({"topology.kubernetes.io/zone": f"z{i // 4}",
                                    "cloud.provider.com/topology-block": f"b{i // 2}",
                                    "cloud.provider.com/topology-rack": f"r{i}"})
    return n


def test_a_gang_required_within_one_block():
    """Arbitrary levels above the rack need the ordered-label topology in the core;
    without it the pods wait with a reason that says so."""
    from alloc.adapters.kubernetes.translate import has_domains
    pods = []
    for k in range(3):
        p = _pod(f"g-{k}", 4)
        p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "g"}
        p["metadata"]["annotations"] = {
            "alloc.io/min-member": "3",
            "kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-block"}
        pods.append(p)
    api = FakeApi([_labelled(i) for i in range(8)], pods)
    dec = io.StringIO()
    s = Scheduler(api, decisions=dec, log=io.StringIO(), events=False)
    s.relist()
    c = s.cycle()
    s.close()
    if has_domains():
        nodes = {n for line in dec.getvalue().splitlines() for n in json.loads(line)["nodes"]}
        blocks = {int(n[1:]) // 2 for n in nodes}
        assert c.started == ("ns/g",) and len(blocks) == 1, nodes
    else:
        assert c.started == () and "ordered-label" in c.reasons["ns/g-0"]


def _member(name, node, priority, group, size):
    p = _bound(name, node, 8, priority)
    p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    p["metadata"]["annotations"].update({"alloc.io/min-member": str(size),
                                         "alloc.io/gang": group, "alloc.io/gang-size": str(size)})
    return p


def test_a_gang_whose_member_ended_keeps_its_rank():
    """When one pod of a running gang ends, the gang is the job of the pods
    left: it keeps its place in the order, so a lower-priority gang that
    needs its node does not preempt it (it waits)."""
    hi = [_member(f"hi-{k}", f"n{k}", 1000, "hi", 2) for k in range(2)]
    low = _bound("low", "n2", 8, 0)
    gw = []
    for k in range(2):
        p = _pod(f"gw-{k}", 8)
        p["spec"]["priority"] = 0
        p["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "gw"}
        p["metadata"]["annotations"] = {"alloc.io/min-member": "2"}
        gw.append(p)
    api = FakeApi([_node(f"n{k}") for k in range(3)], [*hi, low, *gw])
    deleted = []
    api.delete_pod = lambda ns, name, uid, grace=None: deleted.append(name)
    dec = io.StringIO()
    s = Scheduler(api, decisions=dec, log=io.StringIO(), events=False)
    s.relist()
    first = s.cycle()
    ended = dict(hi[0], status={"phase": "Succeeded"},
                 metadata=dict(hi[0]["metadata"], resourceVersion="2"))
    s.feed([("event", "pods", {"type": "MODIFIED", "object": ended})])
    second = s.cycle()
    s.close()
    assert first.preempted == second.preempted == () and deleted == [], dec.getvalue()
    assert "ns/gw" in second.waiting
