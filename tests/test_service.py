"""``alloc serve`` on loopback: endpoints, errors, limits, the token, and
the OpenAPI document checked by schemathesis (no 5xx; every response has a
documented status and matches its schema)."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
pytest.importorskip("uvicorn", reason="the service extra (uvicorn) is not installed")

from alloc.service.server import spawn  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "s3cret"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "ALLOC_SERVICE_TOKEN": TOKEN}


@pytest.fixture(scope="module")
def service():
    with spawn(["--max-body", "300000", "--max-time-limit", "1", "--max-gpus", "4096",
                "--max-sessions", "50", "--workers", "4"], env=ENV, cwd=ROOT) as srv:
        yield srv
        assert "Traceback" not in srv.log_text()


def call(service, method, path, body=None, token=TOKEN, raw=None, headers=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    h = {"Content-Type": "application/json", **(headers or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(service.url + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def cluster_doc(n=2):
    return {"servers": [{"id": f"s{i}", "cpu": 24000, "mem": 512000, "gpus": 8}
                        for i in range(n)]}


def test_health_solvers_and_token(service):
    assert call(service, "GET", "/healthz", token=None)[0] == 200
    st, body = call(service, "GET", "/v1/solvers", token=None)
    assert st == 401 and "bearer token" in body["error"]
    assert call(service, "GET", "/v1/solvers", token="wrong")[0] == 401
    st, body = call(service, "GET", "/v1/solvers")
    assert st == 200 and {"best-fit", "cpsat", "hived"} <= {s["name"] for s in body}


def test_solve_and_check_speak_the_file_formats(service):
    inst = json.loads((ROOT / "instances" / "tiny-grid.json").read_text())
    st, a = call(service, "POST", "/v1/solve", {"instance": inst, "solver": "cpsat",
                                                 "time_limit": 1})
    assert st == 200 and a["format"] == "alloc.allocation/1" and a["solver"] == "cpsat"
    st, c = call(service, "POST", "/v1/check", {"instance": inst, "allocation": a})
    assert st == 200 and c == {"valid": True, "violations": []}
    a["placements"][0]["gpus"] = a["placements"][0]["gpus"] + a["placements"][0]["gpus"]
    st, c = call(service, "POST", "/v1/check", {"instance": inst, "allocation": a})
    assert st == 200 and not c["valid"] and c["violations"]


@pytest.mark.parametrize("body,status,msg", [
    ({"instance": {"format": "alloc.instance/1"}}, 400, "missing field 'cluster'"),
    ({"instance": {}, "solver": "nope"}, 400, "format"),
    ({"instance": None}, 422, "instance"),
    ({"instnce": {}}, 422, "instance: Field required"),
    ({"instance": {}, "time_limit": -1}, 422, "time_limit"),
    ({"instance": {}, "time_limit": 5}, 400, "at most 1 s"),
])
def test_solve_errors_are_one_line(service, body, status, msg):
    st, out = call(service, "POST", "/v1/solve", body)
    assert st == status and msg in out["error"] and "\n" not in out["error"]
    assert set(out) == {"error"}


def test_malformed_json_body_and_size_limit(service):
    st, out = call(service, "POST", "/v1/solve", raw=b"{not json")
    assert st == 422 and "JSON" in out["error"]
    big = json.dumps({"instance": {"name": "x" * 400000}}).encode()
    st, out = call(service, "POST", "/v1/solve", raw=big)
    assert st == 413 and "300000 bytes" in out["error"]
    wide = {"instance": {"format": "alloc.instance/1", "cluster": {"servers": [
        {"id": "a", "cpu": 1, "mem": 1, "gpus": 5000}]}, "jobs": []}}
    st, out = call(service, "POST", "/v1/solve", wide)
    assert st == 400 and "at most 4096" in out["error"]


def test_session_lifecycle(service):
    st, s = call(service, "POST", "/v1/sessions", {"cluster": cluster_doc(2),
                                                    "solver": "best-fit", "name": "life"})
    assert st == 201 and s["state"]["servers"][0]["gpu_type"] == "gpu"
    sid = s["id"]
    assert sid in call(service, "GET", "/v1/sessions")[1]["sessions"]
    events = [{"type": "submit", "job": {"id": f"j{i}", "gpus": 4, "cpu": 12000,
                                         "mem": 256000, "model": "res50"}} for i in range(5)]
    st, e = call(service, "POST", f"/v1/sessions/{sid}/events", {"events": events})
    assert st == 200 and e["applied"] == 5 and e["events"] == 5
    st, r = call(service, "POST", f"/v1/sessions/{sid}/rounds", {"allocation": True})
    assert st == 200 and r["round"] == 1 and len(r["start"]) == 4 and r["unplaced"] == ["j4"]
    assert r["allocation"]["format"] == "alloc.allocation/1"
    host = next(iter(r["start"][0]["cpu"]))
    st, e = call(service, "POST", f"/v1/sessions/{sid}/events",
                 {"events": [{"type": "fail_server", "server": host},
                             {"type": "finish", "job": "j0"}]})
    assert st == 200 and len(e["results"][0]) == 2
    st, r = call(service, "POST", f"/v1/sessions/{sid}/rounds")
    assert st == 200 and r["round"] == 2
    st, g = call(service, "GET", f"/v1/sessions/{sid}?jobs=false")
    assert st == 200 and "jobs" not in g["state"] and g["state"]["events"] == 7
    assert call(service, "DELETE", f"/v1/sessions/{sid}")[0] == 200
    assert call(service, "GET", f"/v1/sessions/{sid}")[0] == 404
    assert call(service, "POST", f"/v1/sessions/{sid}/rounds")[0] == 404


def test_bad_events_change_nothing(service):
    st, s = call(service, "POST", "/v1/sessions", {"cluster": cluster_doc(1)})
    sid = s["id"]
    call(service, "POST", f"/v1/sessions/{sid}/events",
         {"events": [{"type": "submit", "job": {"id": "a", "gpus": 1}}]})
    before = call(service, "GET", f"/v1/sessions/{sid}")[1]
    for body, status, msg in [
        ({"events": [{"type": "finish", "job": "a"}, {"type": "finish", "job": "a"}]}, 400,
         "events[1]: unknown job 'a'"),
        ({"events": [{"type": "submit", "job": {"id": "a"}}]}, 400, "already exists"),
        ({"events": [{"type": "fail_server", "server": "zz"}]}, 400, "unknown server 'zz'"),
        ({"events": [{"type": "submit", "job": {"id": "b", "gpus": "x"}}]}, 400,
         "events[0].job.gpus: expected integer"),
        ({"events": [{"type": "launch"}]}, 422, "events[0]: "),
        ({"events": [{"type": "set_priority", "job": "a", "priority": 10 ** 6}]}, 422,
         "priority"),
    ]:
        st, out = call(service, "POST", f"/v1/sessions/{sid}/events", body)
        assert st == status and msg in out["error"], out
    assert call(service, "GET", f"/v1/sessions/{sid}")[1] == before
    st, out = call(service, "POST", "/v1/sessions", {"cluster": {"servers": []}})
    assert st == 400 and "servers" in out["error"]


def test_serve_without_the_extra_says_how_to_install(tmp_path):
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text("import sys\nsys.modules['fastapi'] = None\n")
    env = {**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    p = subprocess.run([sys.executable, "-m", "alloc", "serve", "--port", "1"], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0
    assert "pip install fastapi uvicorn" in p.stderr and "'.[service]'" in p.stderr


def test_serve_help_states_every_default():
    p = subprocess.run([sys.executable, "-m", "alloc", "serve", "--help"], env=ENV, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    for flag in ("--host", "--port", "--token", "--max-body", "--workers", "--max-sessions",
                 "--max-time-limit", "--max-gpus", "--log-level"):
        assert flag in p.stdout
    assert p.stdout.count("(default:") >= 9


schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.checks import (content_type_conformance, not_a_server_error,  # noqa: E402
                                 response_schema_conformance, status_code_conformance)


def _operations(service):
    # the examples and fuzzing phases; the coverage phase's boundary cases
    # multiply the slow instance-shaped bodies and add little here
    cfg = schemathesis.config.SchemathesisConfig.from_str(
        "[phases.coverage]\nenabled = false\n")
    api = schemathesis.openapi.from_url(service.url + "/openapi.json", config=cfg)
    return [op.ok() for op in api.get_all_operations()]


def test_api_matches_its_openapi_document(service):
    """Every operation, fuzzed from the service's own OpenAPI document: no
    server error, and status, content type and body as documented.  The
    operations are driven through schemathesis's Python API (one hypothesis
    run each), not its pytest plug-in, which follows pytest's internals."""
    ops = _operations(service)
    assert ops
    for op in ops:
        @given(case=op.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck),
                  derandomize=True, database=None)
        def conforms(case):
            case.call_and_validate(
                headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30,
                checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                        response_schema_conformance])
        conforms()
