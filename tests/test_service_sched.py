"""The service's sessions speak the scheduler's events too: preemption by
order, stop, preempt and reconcile."""
import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
pytest.importorskip("uvicorn", reason="the service extra (uvicorn) is not installed")

from test_service import call, cluster_doc, service  # noqa: E402,F401


def test_session_with_preemption_by_order_and_scheduler_events(service):  # noqa: F811
    doc = {"servers": [dict(s, gpus=2) for s in cluster_doc(1)["servers"]]}
    st, s = call(service, "POST", "/v1/sessions", {"cluster": doc, "preempt": "order"})
    assert st == 201, s
    sid = s["id"]
    subs = [{"type": "submit", "job": {"id": j, "gpus": 1}} for j in ("a", "b", "c")]
    assert call(service, "POST", f"/v1/sessions/{sid}/events", {"events": subs})[0] == 200
    st, r = call(service, "POST", f"/v1/sessions/{sid}/rounds")
    assert st == 200 and len(r["start"]) == 2
    order = {"type": "set_order", "order": ["c", "a", "b"]}
    call(service, "POST", f"/v1/sessions/{sid}/events", {"events": [order]})
    st, r = call(service, "POST", f"/v1/sessions/{sid}/rounds")
    assert [p["job"] for p in r["preempt"]] == ["b"] and r["preempted_for"] == {"b": "c"}
    events = [{"type": "preempt", "job": "a"}, {"type": "stop", "job": "b"},
              {"type": "reconcile", "running": {"c": None}}]
    st, out = call(service, "POST", f"/v1/sessions/{sid}/events", {"events": events})
    assert st == 200, out
    st, bad = call(service, "POST", f"/v1/sessions/{sid}/events",
                   {"events": [{"type": "reconcile", "running": {"zz": None}}]})
    assert st == 400 and "unknown job 'zz'" in bad["error"]


def test_sessions_take_their_order_from_the_registry(service):  # noqa: F811
    st, pols = call(service, "GET", "/v1/policies?kind=order")
    assert st == 200 and {"fifo", "las"} <= {p["name"] for p in pols}
    assert all(p["kind"] == "order" for p in pols)
    doc = {"servers": [dict(s, gpus=1) for s in cluster_doc(1)["servers"]]}
    st, s = call(service, "POST", "/v1/sessions", {"cluster": doc, "preempt": "order",
                                                   "order_policy": "las"})
    assert st == 201, s
    sid = s["id"]
    call(service, "POST", f"/v1/sessions/{sid}/events",
         {"events": [{"type": "submit", "job": {"id": "a", "gpus": 1}}]})
    st, r = call(service, "POST", f"/v1/sessions/{sid}/rounds")
    assert [p["job"] for p in r["start"]] == ["a"]
    call(service, "POST", f"/v1/sessions/{sid}/events",
         {"events": [{"type": "submit", "job": {"id": "b", "gpus": 1}}]})
    st, r = call(service, "POST", f"/v1/sessions/{sid}/rounds")   # a has held its GPU a while
    assert [p["job"] for p in r["preempt"]] == ["a"] and [p["job"] for p in r["start"]] == ["b"]
    st, bad = call(service, "POST", "/v1/sessions", {"cluster": doc, "order_policy": "srtf"})
    assert st == 400 and "order policy 'srtf' needs duration" in bad["error"]
    st, bad = call(service, "POST", "/v1/sessions", {"cluster": doc, "order_policy": "nope"})
    assert st == 400 and "unknown order policy 'nope'" in bad["error"]
