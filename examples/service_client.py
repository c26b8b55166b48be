"""Drive ``alloc serve`` over HTTP with the standard library only -- the
calls a scheduler written in Go or C makes, in Python for brevity.

Start a service first (``alloc serve``; it needs the service extra,
``pip install '.[service]'`` in a clone), then run ``python examples/service_client.py [--url URL] [--token T]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request


class Api:
    """JSON over HTTP: ``api(method, path, body) -> (status, document)``."""

    def __init__(self, url: str, token: str | None):
        self.url, self.token = url.rstrip("/"), token

    def __call__(self, method: str, path: str, body=None):
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:  # 4xx/5xx carry {"error": "..."}
            return e.code, json.loads(e.read())


def job(jid: str, gpus: int, model: str) -> dict:
    """A job in the instance format: 3 cores and 62.5 GiB per GPU."""
    return {"id": jid, "gpus": gpus, "cpu": 3000 * gpus, "mem": 64000 * gpus, "model": model}


def show(r: dict) -> None:
    def where(p):
        return p["job"] + "@" + ",".join(g["gpu"] for g in p["gpus"])
    print(f"round {r['round']}: start [{', '.join(where(p) for p in r['start'])}] "
          f"stop [{', '.join(p['job'] for p in r['preempt'])}] "
          f"move [{', '.join(where(p) for p in r['move'])}] "
          f"waiting [{', '.join(r['unplaced'])}]")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8642",
                    help="the service (default: http://127.0.0.1:8642)")
    ap.add_argument("--token", default=os.environ.get("ALLOC_SERVICE_TOKEN"),
                    help="bearer token (default: $ALLOC_SERVICE_TOKEN)")
    args = ap.parse_args(argv)
    api = Api(args.url, args.token)

    st, health = api("GET", "/healthz")
    st, solvers = api("GET", "/v1/solvers")
    if st != 200:
        print(f"service refused: {solvers['error']}", file=sys.stderr)
        return 1
    print(f"alloc {health['version']}: {len(solvers)} solvers")

    cluster = {"servers": [{"id": f"s{i}", "cpu": 24000, "mem": 512000, "gpus": 8,
                            "gpu_type": "V100"} for i in range(3)]}
    st, s = api("POST", "/v1/sessions", {"cluster": cluster, "solver": "best-fit"})
    sid = s["id"]
    print(f"session {sid}")

    waves = [
        [{"type": "submit", "job": job(f"j{k}", n, m)}
         for k, (n, m) in enumerate([(4, "res50"), (2, "gnmt"), (8, "transformer"),
                                     (1, "lstm"), (4, "res18")])],
        [{"type": "finish", "job": "j1"}, {"type": "submit", "job": job("j5", 4, "m5")},
         {"type": "submit", "job": job("j6", 2, "vae")}],
        [{"type": "fail_server", "server": "s0"}],
        # a new server and a new 8-GPU job ranked above the one waiting (j2)
        [{"type": "add_server", "server": {"id": "s3", "cpu": 24000, "mem": 512000,
                                           "gpus": 8, "gpu_type": "V100"}},
         {"type": "submit", "job": job("j7", 8, "bert")},
         {"type": "set_order", "order": ["j7", "j2"]}],
    ]
    for events in waves:
        st, out = api("POST", f"/v1/sessions/{sid}/events", {"events": events})
        assert st == 200, out
        lost = [x for x in out["results"] if x]
        if lost:
            print(f"  failed server: jobs to restart {lost[0]}")
        st, r = api("POST", f"/v1/sessions/{sid}/rounds", {})
        assert st == 200, r
        show(r)

    # a bad batch is refused whole, with one line naming the event
    st, out = api("POST", f"/v1/sessions/{sid}/events",
                  {"events": [{"type": "finish", "job": "j0"}, {"type": "finish", "job": "j0"}]})
    print(f"bad batch: {st} {out['error']}")

    # the one-shot call: an instance in, an allocation out, checked
    inst = {"format": "alloc.instance/1", "name": "oneshot", "cluster": cluster,
            "jobs": [job("x0", 8, "res50"), job("x1", 4, "bert"), job("x2", 4, "m5")]}
    st, a = api("POST", "/v1/solve", {"instance": inst, "solver": "best-fit"})
    st, chk = api("POST", "/v1/check", {"instance": inst, "allocation": a})
    print(f"solve: {a['status']} value {a['value']:.3f}, {len(a['placements'])} placed, "
          f"valid={chk['valid']}")
    st, _ = api("DELETE", f"/v1/sessions/{sid}")
    return 0 if st == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
