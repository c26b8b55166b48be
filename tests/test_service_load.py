"""Bounded concurrent load on ``alloc serve`` (a real server on loopback):
8 clients x 200 rounds, each with its own session of arrivals and finishes,
plus traffic on one shared session.  No event is lost or applied twice, and
every returned allocation passes :func:`alloc.violations` against the jobs
as the client knows them (none over-commits the cluster)."""
import http.client
import json
import os
import random
import threading
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
pytest.importorskip("uvicorn", reason="the service extra (uvicorn) is not installed")

from alloc import Cluster, Server, violations  # noqa: E402
from alloc.check import capacity_problems  # noqa: E402
from alloc.io import allocation_from_dict, placement_from_dict  # noqa: E402
from alloc.profiles import load_profile  # noqa: E402
from alloc.service.server import spawn  # noqa: E402
from alloc.session import job_from_dict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLIENTS, ROUNDS, SHARED_EVERY = 8, 200, 10
SOLVERS = ["best-fit", "synergy-tune", "fgd", "hived"]
SERVERS = [{"id": f"s{i}", "cpu": 24000, "mem": 512000, "gpus": 8, "gpu_type": "V100"}
           for i in range(4)]
CLUSTER = Cluster(tuple(Server(s["id"], s["cpu"], s["mem"], s["gpus"], s["gpu_type"])
                        for s in SERVERS))


class Client:
    """One keep-alive HTTP connection."""

    def __init__(self, url):
        u = urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)

    def __call__(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        self.conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        return r.status, json.loads(r.read())


def new_job(rng, jid):
    n = rng.choice([1, 1, 1, 2, 4])
    doc = {"id": jid, "gpus": n, "cpu": 3000 * n, "mem": 64000 * n,
           "model": rng.choice(["res18", "gnmt", "lstm", "m5"])}
    if n == 1 and rng.random() < 0.2:
        doc.update(gpu_milli=500, cpu=1000, mem=8000)
        del doc["model"]
    return doc


def own_session(c, k, errors, shared_log, shared):
    rng = random.Random(k)
    st, s = c("POST", "/v1/sessions", {"cluster": {"servers": SERVERS},
                                        "solver": SOLVERS[k % len(SOLVERS)]})
    assert st == 201, s
    sid = s["id"]
    jobs, sent, nj = {}, 0, 0
    for rnd in range(ROUNDS):
        events = [{"type": "finish", "job": j} for j, job in jobs.items()
                  if job.current is not None and rng.random() < 0.2]
        for _ in range(rng.choice([0, 1, 1, 2])):
            nj += 1
            events.append({"type": "submit", "job": new_job(rng, f"c{k}-{nj}")})
        st, out = c("POST", f"/v1/sessions/{sid}/events", {"events": events})
        assert st == 200 and out["events"] == sent + len(events), out
        sent += len(events)
        for e in events:
            if e["type"] == "finish":
                del jobs[e["job"]]
            else:
                j = job_from_dict(e["job"])
                jobs[j.id] = replace(j, profile=load_profile(j.model)) if j.model else j
        if rnd % 50 == 25:  # a bad batch: refused whole, nothing changes
            st, out = c("POST", f"/v1/sessions/{sid}/events",
                        {"events": [{"type": "submit", "job": new_job(rng, "x")},
                                    {"type": "finish", "job": "never"}]})
            assert st == 400 and "never" in out["error"]
        st, r = c("POST", f"/v1/sessions/{sid}/rounds", {"allocation": True})
        assert st == 200, r
        alloc = allocation_from_dict(r["allocation"])
        bad = violations(CLUSTER, list(jobs.values()), alloc, max_moves=0)
        if bad:
            errors.append((k, rnd, bad[:3]))
        for p in alloc.placements:
            jobs[p.job] = replace(jobs[p.job], current=p)
        for j in alloc.preempted:
            jobs[j] = replace(jobs[j], current=None)
        if rnd % SHARED_EVERY == k % SHARED_EVERY:
            shared_traffic(c, k, rnd, rng, shared, shared_log, errors)
    st, g = c("GET", f"/v1/sessions/{sid}")
    assert st == 200 and g["state"]["events"] == sent
    assert {j["id"] for j in g["state"]["jobs"]} == set(jobs)
    for j in g["state"]["jobs"]:
        cur = jobs[j["id"]].current
        assert (cur is None) == (j.get("current") is None)
        assert cur is None or placement_from_dict(j["current"], j["id"]).same_as(cur)
    assert c("DELETE", f"/v1/sessions/{sid}")[0] == 200


def shared_traffic(c, k, rnd, rng, shared, log, errors):
    mine = [e for e in log if e[0] == k and e[2] == "submit"]
    events = [{"type": "submit", "job": new_job(rng, f"sh{k}-{rnd}-{i}")} for i in range(2)]
    done = {e[1] for e in log if e[0] == k and e[2] == "finish"}
    events += [{"type": "finish", "job": e[1]} for e in mine[:3] if e[1] not in done]
    st, out = c("POST", f"/v1/sessions/{shared}/events", {"events": events})
    assert st == 200, out
    for e in events:
        log.append((k, e["job"]["id"] if e["type"] == "submit" else e["job"], e["type"]))
    st, r = c("POST", f"/v1/sessions/{shared}/rounds", {"allocation": True})
    assert st == 200, r
    a = allocation_from_dict(r["allocation"])
    names = [p.job for p in a.placements] + list(a.unplaced)
    over = capacity_problems(CLUSTER, a.placements)
    if over or len(names) != len(set(names)):
        errors.append(("shared", k, rnd, over[:3]))


def test_concurrent_sessions_lose_nothing_and_never_overcommit():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ALLOC_SERVICE_TOKEN", None)
    with spawn(["--workers", "8", "--max-time-limit", "5"], env=env, cwd=ROOT) as srv:
        c0 = Client(srv.url)
        st, s = c0("POST", "/v1/sessions", {"cluster": {"servers": SERVERS}, "solver": "best-fit"})
        shared = s["id"]
        errors, log, failures = [], [], []

        def run(k):
            try:
                own_session(Client(srv.url), k, errors, log, shared)
            except BaseException as exc:  # reported below, with the client number
                failures.append((k, repr(exc)[:500]))

        threads = [threading.Thread(target=run, args=(k,)) for k in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not failures, failures
        assert not errors, errors
        st, g = Client(srv.url)("GET", f"/v1/sessions/{shared}")  # c0 idled past keep-alive
        submitted = {e[1] for e in log if e[2] == "submit"}
        finished = {e[1] for e in log if e[2] == "finish"}
        assert g["state"]["events"] == len(log)
        assert {j["id"] for j in g["state"]["jobs"]} == submitted - finished
        assert "Traceback" not in srv.log_text()
