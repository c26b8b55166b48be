"""alloc k8s run against a real kube-apiserver: about 100 pods on 16 fake nodes.

16 nodes of 8 GPUs (A100 in zone z0, H100 in z1), three levels above the
node (zone > block > rack, two nodes a rack); single-GPU pods, shared-GPU
pods, gangs of 2-8 pods (some required within one rack), a node cordoned
mid-run, a higher-priority gang that must preempt, a scheduler killed and
restarted mid-run.  The scheduler runs as a process, as the docs' service
account (so the docs' ClusterRole is what it has).
"""
from __future__ import annotations

import json
import time

import common
import harness
from harness import BLOCK, RACK, ZONE

NODES = 16


def _nodes(core) -> dict[str, dict]:
    labels = {}
    for i in range(NODES):
        name = f"n{i:02d}"
        lab = {ZONE: f"z{i // 8}", BLOCK: f"b{i // 4}", RACK: f"r{i // 2}"}
        core.create_node(harness.node(name, product="A100" if i < 8 else "H100", labels=lab))
        labels[name] = lab
    return labels


def _podgroup(custom, ns: str, name: str, min_member: int) -> None:
    custom.create_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", ns, "podgroups",
        {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
         "metadata": {"name": name}, "spec": {"minMember": min_member}})


def test_workload_against_a_real_api_server(k8s, admin, namespace, tmp_path):
    core, custom, api = admin
    common.rbac(api)
    common.podgroup_crd(api)
    common.priority_classes(api)
    labels = _nodes(core)
    ns = namespace
    dec = tmp_path / "decisions.jsonl"
    gangs: dict[str, list[str]] = {}
    required: set[str] = set()
    mine: set[str] = set()

    def make(name, **kw):
        harness.create(core, ns, harness.pod(name, **kw))
        mine.add(name)

    def gang(g, n, gpus, *, pg=False, rack=False, **kw):
        if pg:
            _podgroup(custom, ns, g, n)
        for k in range(n):
            make(f"{g}-{k}", gpus=gpus, group=g, min_member=None if pg else n,
                 required=RACK if rack else None, **kw)
        gangs[g] = [f"{g}-{k}" for k in range(n)]
        if rack:
            required.add(g)

    sched = common.SchedulerProcess(k8s, dec, tmp_path / "scheduler-1.log", interval=0.3)
    with harness.Kubelet(core, ns), harness.Recorder(core, ns) as rec:
        sched.start()
        # wave 1: 40 single-GPU pods, 12 shared-GPU pods, five gangs
        for i in range(40):
            make(f"s{i}", gpus=1, product=(None, "A100", "H100", None)[i % 4], run_s=2 + i % 3)
        for i in range(12):
            make(f"m{i}", milli=(250, 500)[i % 2], cpu="1", memory="2Gi", run_s=3)
        gang("ga", 4, 1, run_s=3)
        gang("gb", 8, 1, pg=True, run_s=3)
        gang("gc", 2, 2, rack=True, product="H100", run_s=3)
        gang("gd", 4, 2, rack=True, run_s=3)
        gang("ge", 3, 1, product="H100", run_s=3)
        wave1 = set(mine)
        harness.wait(lambda: wave1 <= set(rec.first_node), 60, what="wave 1 bound")
        # a node cordoned mid-run: its pods stay, nothing new goes there
        core.patch_node("n03", {"spec": {"unschedulable": True}})
        cordoned_at = time.monotonic()
        harness.wait(lambda: mine <= rec.ended | rec.deleted, 90, what="wave 1 ended")
        # wave 2: low-priority whole-node pods fill 14 of the 15 open nodes, then a
        # high-priority gang of two whole nodes must preempt one of them
        for i in range(14):
            make(f"low{i}", gpus=8, cpu="8", memory="32Gi", priority_class="alloc-low", run_s=25)
        harness.wait(lambda: sum(f"low{i}" in rec.first_node for i in range(14)) == 14, 60,
                     what="the low-priority pods bound")
        gang("hi", 2, 8, priority_class="alloc-high", cpu="8", memory="32Gi", run_s=3)
        harness.wait(lambda: all(p in rec.first_node for p in gangs["hi"]), 60,
                     what="the high-priority gang bound")
        # wave 3 and a scheduler killed mid-run (pods in flight), then restarted
        for i in range(12):
            make(f"w{i}", gpus=1, cpu="1", memory="1Gi", run_s=2)
        time.sleep(0.4)
        sched.kill()
        gang("gw", 4, 1, run_s=2)
        sched2 = common.SchedulerProcess(k8s, dec, tmp_path / "scheduler-2.log", interval=0.3)
        with sched2:
            harness.wait(lambda: mine <= rec.ended | rec.deleted, 120, what="every pod ended")
        log = (tmp_path / "scheduler-1.log").read_text() + (tmp_path / "scheduler-2.log").read_text()

    d = harness.decisions(dec)
    starts = [x for x in d if x["action"] == "start"]
    chosen: dict[str, str] = {}
    for x in starts:
        for p, n in x["pods"].items():
            name = p.split("/", 1)[1]
            assert name not in chosen, f"{name} started twice: {x}"     # nothing bound twice
            chosen[name] = n
    # every pod is bound once, to the node alloc chose
    assert len(mine) >= 100
    for name, nodes in rec.bindings.items():
        assert len(nodes) == 1, (name, nodes)
    for name, node in rec.first_node.items():
        assert chosen.get(name) == node, (name, node, chosen.get(name))
    # nothing over-committed at any moment (CPU, memory, GPUs, each GPU's milli)
    assert not rec.overcommit, rec.overcommit[:3]
    # every gang bound whole or not at all, required racks kept (a gang the killed
    # scheduler left bound in part is rolled back whole by the restarted one)
    rolled = {x["job"].split("/", 1)[1] for x in d if x["action"] == "rollback"}
    for g, members in gangs.items():
        bound = [p for p in members if p in rec.first_node]
        if g in rolled:
            assert set(bound) <= rec.deleting, (g, bound)
            continue
        assert len(bound) in (0, len(members)), (g, bound)
        assert bound, f"gang {g} never ran"
        if g in required:
            racks = {labels[rec.first_node[p]][RACK] for p in members}
            assert len(racks) == 1, (g, racks)
    # the cordoned node took nothing after the cordon
    late = [p for p, t in rec.bind_time.items() if t > cordoned_at + 1.0 and rec.first_node[p] == "n03"]
    assert not late, late
    # the high-priority gang preempted, every deletion is reported with an Event
    pre = [x for x in d if x["action"] == "preempt"]
    assert pre and all(x["for"] == f"{ns}/hi" for x in pre), pre
    reported = {p.split("/", 1)[1] for x in d if x["action"] in ("preempt", "evict", "rollback")
                for p in x["pods"]}
    assert rec.deleting <= reported, rec.deleting - reported
    assert {p for p in rec.deleting if p.startswith("low")}, "no low-priority pod was preempted"
    ev = {**common.pod_events(core, ns, "Preempted"), **common.pod_events(core, ns, "GangRollback")}
    assert all(p in ev for p in rec.deleting), rec.deleting - set(ev)
    rolled_pods = {p for g in rolled for p in gangs.get(g, ())}
    assert all(p.startswith("low") or p in rolled_pods for p in rec.deleting), rec.deleting
    # all pods end
    assert mine <= rec.ended | rec.deleted
    # scheduled pods carry an Event each
    assert set(common.pod_events(core, ns, "Scheduled")) >= set(rec.first_node) - rec.deleted
    lat = [rec.bind_time[p] - rec.created[p] for p in rec.bind_time if p.startswith(("s", "m"))]
    print(json.dumps({"pods": len(mine), "bound": len(rec.first_node),
                      "preempted": len(rec.deleting),
                      "bind_p50_s": round(common.quantile(lat, 0.5), 3),
                      "bind_p99_s": round(common.quantile(lat, 0.99), 3)}))
    assert "Traceback" not in log, log[-3000:]
