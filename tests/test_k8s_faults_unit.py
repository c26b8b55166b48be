"""Faults the real API server will not make on demand: a broken watch, a 410 Gone,
a binding whose answer was lost.  An API stand-in plays the server."""
from __future__ import annotations

import io
import json
import time

from alloc.adapters.kubernetes.client import ApiError, Watcher
from alloc.adapters.kubernetes.scheduler import Scheduler

GPU = "nvidia.com/gpu"


def _node(name):
    return {"metadata": {"name": name, "resourceVersion": "1",
                         "labels": {"nvidia.com/gpu.product": "A100"}},
            "status": {"allocatable": {"cpu": "8", "memory": "64Gi", GPU: "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name, gpus=1):
    return {"metadata": {"name": name, "namespace": "ns", "uid": "u-" + name, "resourceVersion": "1",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedulerName": "alloc", "containers": [{"resources": {
                "limits": {GPU: str(gpus), "cpu": "1", "memory": "1Gi"}}}]}}


class FakeApi:
    """Lists, watches and writes in memory; each list of `script` is what one
    watch call yields (an exception is raised)."""

    def __init__(self, nodes=(), pods=(), script=()):
        self.nodes, self.pods = list(nodes), list(pods)
        self.script = list(script)
        self.lists: list[str] = []
        self.watched: list[tuple[str, str]] = []
        self.binds: list[tuple[str, str]] = []
        self.bound: dict[str, str] = {}
        self.fail_bind: dict[str, Exception] = {}
        self.calls: dict[str, int] = {}
        self.spent = 0.0
        self.thread_spent = 0.0
        self.total_calls = 0

    def list(self, kind):
        self.lists.append(kind)
        return {"nodes": self.nodes, "pods": self.pods}.get(kind, []), str(len(self.lists))

    def watch(self, kind, rv, timeout=300):
        self.watched.append((kind, rv))
        if kind != "pods" or not self.script:
            time.sleep(0.05)
            return
        step = self.script.pop(0)
        for ev in step:
            if isinstance(ev, Exception):
                raise ev
            yield ev

    def bind(self, namespace, name, uid, node, annotations):
        self.binds.append((name, node))
        self.bound[name] = node                 # the server did bind it...
        exc = self.fail_bind.pop(name, None)
        if exc is not None:
            raise exc                           # ...but the answer was lost

    def get_pod(self, namespace, name):
        p = next(p for p in self.pods if p["metadata"]["name"] == name)
        return dict(p, spec=dict(p["spec"], nodeName=self.bound.get(name)))

    def event(self, *args):
        pass

    def delete_pod(self, *args):
        pass


def _drain(w: Watcher, until, timeout=5.0) -> list:
    items, end = [], time.monotonic() + timeout
    while time.monotonic() < end and not until(items):
        try:
            items.append(w.queue.get(timeout=0.1))
        except Exception:
            pass
    w.stop()
    return items


def test_a_broken_watch_resumes_from_its_resource_version():
    ev = {"type": "ADDED", "object": {"metadata": {"name": "a", "namespace": "ns",
                                                  "resourceVersion": "7"}}}
    api = FakeApi(script=[[ev, ApiError(0, "connection reset")], []])
    w = Watcher(api, ("pods",)).start()
    items = _drain(w, lambda xs: len(api.watched) >= 2 and any(x[0] == "event" for x in xs))
    assert api.lists == ["pods"]                      # no list again: the watch resumed
    assert ("pods", "7") in api.watched               # from the last version seen
    assert w.errors == 1 and w.relists == 0
    assert [x[0] for x in items][:2] == ["list", "event"]


def test_a_410_gone_lists_again():
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}
    api = FakeApi(script=[[gone], []])
    w = Watcher(api, ("pods",)).start()
    _drain(w, lambda xs: sum(x[0] == "list" for x in xs) >= 2)
    assert api.lists.count("pods") >= 2 and w.relists >= 1


def test_a_binding_whose_answer_was_lost_is_not_made_twice():
    api = FakeApi([_node("n0")], [_pod("p")])
    api.fail_bind["p"] = ApiError(0, "timed out")
    log = io.StringIO()
    dec = io.StringIO()
    s = Scheduler(api, log=log, decisions=dec, events=False)
    s.relist()
    c = s.cycle()
    s.close()
    assert api.binds == [("p", "n0")]                 # read spec.nodeName, did not bind again
    assert c.bound == ("ns/p",)
    assert [json.loads(x)["action"] for x in dec.getvalue().splitlines()] == ["start"]
    assert "attempt 1 of 3" in log.getvalue()


def test_a_binding_refused_leaves_the_pod_waiting():
    api = FakeApi([_node("n0")], [_pod("p")])
    api.fail_bind["p"] = ApiError(403, "forbidden")
    api.bound = {}
    s = Scheduler(api, log=io.StringIO(), events=False)
    s.relist()
    tries = []

    def refuse(*a):
        tries.append(a)
        raise ApiError(403, "forbidden")
    api.bind = refuse
    c = s.cycle()
    assert c.bound == () and c.errors and s.session is not None and "ns/p" not in s.session.jobs
    assert len(tries) == 1                            # refused: not retried in the cycle
    c2 = s.cycle()                                    # the pod waits, and is placed again
    assert len(tries) == 2 and c2.errors and c2.bound == ()
    s.close()
