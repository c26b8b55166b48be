"""The service as a newcomer meets it: idle sessions expire, malformed JSON is
named by line and column, one path notation in every message, the /docs page
needs no other host, and the status table of docs/service.md is the truth."""
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
pytest.importorskip("uvicorn", reason="the service extra (uvicorn) is not installed")

from alloc.service.app import ServiceConfig, create_app  # noqa: E402
from alloc.service.server import run_in_thread  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = {"servers": [{"id": "s0", "cpu": 24000, "mem": 512000, "gpus": 8}]}


class Answer:
    """A response: status code, text, JSON."""

    def __init__(self, status_code, text):
        self.status_code, self.text = status_code, text

    def json(self):
        return json.loads(self.text)


class Client:
    """A plain HTTP client of a service on loopback (standard library only)."""

    def __init__(self, url):
        self.url = url

    def request(self, method, path, body=None, headers=None):
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return Answer(r.status, r.read().decode(errors="replace"))
        except urllib.error.HTTPError as e:
            return Answer(e.code, e.read().decode(errors="replace"))

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, json=None, content=None, headers=None):
        if json is not None:
            content = globals()["json"].dumps(json).encode()
            headers = {"content-type": "application/json"}
        return self.request("POST", path, content, headers)


@pytest.fixture(scope="module")
def client():
    with run_in_thread(create_app(ServiceConfig(max_sessions=4))) as srv:
        yield Client(srv.url)


def new_session(client):
    r = client.post("/v1/sessions", json={"cluster": CLUSTER})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_idle_sessions_expire_and_free_their_place():
    from alloc.service.store import SessionStore
    now = [0.0]
    store = SessionStore(max_sessions=2, idle_s=60, clock=lambda: now[0])
    a, b = store.add("A"), store.add("B")
    now[0] = 30
    with store.use(a):
        pass                                    # a request keeps a alive
    now[0] = 80                                 # b idle 80 s, a 50 s
    c = store.add("C")                          # b's place is free again
    assert store.ids() == [a, c]
    with pytest.raises(LookupError, match="expired after 60 s idle"):
        with store.use(b):
            pass
    assert SessionStore().idle_s == 3600 and ServiceConfig().session_idle_s == 3600


def test_the_service_cli_sets_the_idle_expiry():
    from alloc.service.cli import parser
    assert parser().parse_args(["--session-idle", "5"]).session_idle == 5


def test_malformed_json_names_line_and_column(client):
    r = client.post("/v1/solve", content=b'{"instance": {"x": 1}\n, "b": tru}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["error"] == ("request body: line 2 column 8: malformed JSON "
                                 "(Expecting value)")


def test_one_path_notation(client):
    sid = new_session(client)
    msgs = []
    for ev in ({"type": "launch"},
               {"type": "set_priority", "job": "a", "priority": 10 ** 6},
               {"type": "submit", "job": {"id": "b", "gpus": "x"}}):
        r = client.post(f"/v1/sessions/{sid}/events", json={"events": [{"type": "finish",
                                                                          "job": "z"}, ev]})
        msgs.append(r.json()["error"])
    assert all(m.startswith("events[") for m in msgs), msgs
    assert not any(re.search(r"\.\d|set_priority\.", m) for m in msgs), msgs


def test_docs_page_loads_nothing_from_another_host(client):
    pytest.importorskip("swagger_ui_bundle", reason="the service extra (swagger-ui-bundle-v2) "
                                                    "is not installed")
    page = client.get("/docs")
    assert page.status_code == 200
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)
    urls = re.findall(r"""(?:src|href)=["']([^"']+)""", page.text)
    assert len(urls) >= 2
    for u in urls:
        assert client.get(u).status_code == 200, u


def _documented_status(phrase: str) -> set[int]:
    text = (ROOT / "docs" / "service.md").read_text()
    return {int(m.group(1)) for m in re.finditer(r"^\| (\d{3}) \|(.*)$", text, re.M)
            if phrase in m.group(2)}


def test_status_table_matches_the_service(client):
    sid = new_session(client)
    inside = client.post(f"/v1/sessions/{sid}/events",
                         json={"events": [{"type": "submit", "job": {"id": "b", "gpus": "x"}}]})
    assert _documented_status("a wrong type inside") == {inside.status_code} == {400}
    envelope = client.post(f"/v1/sessions/{sid}/events", json={"events": "x"})
    assert _documented_status("a wrong type of a request field") == {envelope.status_code} \
        == {422}
    bad = client.post("/v1/solve", content=b"{", headers={"content-type": "application/json"})
    assert _documented_status("malformed JSON") == {bad.status_code}
