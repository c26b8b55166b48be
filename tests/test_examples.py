"""The examples run as shipped: the scheduler loop on a Session, and the
standard-library client against ``alloc serve`` on loopback."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("ALLOC_SERVICE_TOKEN", None)


def run(args, timeout=120):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


def test_scheduler_loop():
    p = run(["examples/scheduler_loop.py"])
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout
    rounds = [b for b in out.split("round ")[1:]]
    assert len(rounds) == 6
    r3 = rounds[2]
    assert "r0@s0" in r3 and "stop:  -" not in r3          # the preemption
    assert "server s3 failed; jobs to restart:" in out        # the failure
    assert "refused: finish: unknown job 'a0'" in out          # a bad event
    assert "start: -" not in rounds[4]                         # restarts after finishes


def test_service_client():
    pytest.importorskip("fastapi", reason="the service extra (fastapi) is not installed")
    pytest.importorskip("uvicorn", reason="the service extra (uvicorn) is not installed")
    from alloc.service.server import spawn
    with spawn([], env=ENV, cwd=ROOT) as srv:
        p = run(["examples/service_client.py", "--url", srv.url])
    assert p.returncode == 0, p.stderr[-2000:]
    assert "round 4: start [j7@s3" in p.stdout and "waiting [j2]" in p.stdout
    assert "bad batch: 400 events[1]: unknown job 'j0'" in p.stdout
    assert "valid=True" in p.stdout
