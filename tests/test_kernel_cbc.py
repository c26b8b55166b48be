"""The CBC engine keeps the caller's time limit in wall time: building the
model, writing it, CBC itself and reading its answer all count, and a CBC
process still running past the limit is killed."""
import os
import stat
import time

import pytest

from alloc.kernel import LinearModel, solve
from alloc.kernel import cbc
from alloc.model import Status

pulp = pytest.importorskip("pulp")


def knapsack(n: int = 8) -> LinearModel:
    m = LinearModel("k")
    xs = [m.add_var(0, 1, integer=True, obj=float(i + 1)) for i in range(n)]
    m.add_row({x: float(i % 3 + 1) for i, x in enumerate(xs)}, hi=5.0)
    return m


def test_cbc_solves_a_small_model_to_optimality():
    """Values 1..8, weights 1, 2, 3, 1, 2, 3, 1, 2, capacity 5: the
    optimum (items 1, 4, 7 and 8, value 20) is the enumeration's."""
    from itertools import product
    w = [i % 3 + 1 for i in range(8)]
    best = max(sum((i + 1) * b for i, b in enumerate(bits)) for bits in product((0, 1), repeat=8)
               if sum(wi * b for wi, b in zip(w, bits)) <= 5)
    r = solve(knapsack(), "cbc", time_limit=10)
    assert r.status is Status.OPTIMAL and r.objective == pytest.approx(best)
    assert r.x is not None and sum(w[i] * r.x[i] for i in range(8)) <= 5 + 1e-9


def test_cbc_past_its_limit_is_killed(tmp_path, monkeypatch):
    """A CBC that ignores its limit (here a stand-in that sleeps) is killed
    shortly after it: the call returns UNKNOWN, saying why, in time."""
    fake = tmp_path / "cbc"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(cbc, "cbc_path", lambda cmd: str(fake))
    t0 = time.perf_counter()
    r = solve(knapsack(), "cbc", time_limit=0.5)
    wall = time.perf_counter() - t0
    assert r.status is Status.UNKNOWN and r.stats.get("timed_out") == "killed at the time limit"
    assert wall < 0.5 * 1.1 + 0.5


@pytest.mark.skipif(os.name != "posix", reason="shell stand-in")
def test_cbc_that_fails_is_unknown_with_the_error(tmp_path, monkeypatch):
    fake = tmp_path / "cbc"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(cbc, "cbc_path", lambda cmd: str(fake))
    r = solve(knapsack(), "cbc", time_limit=2)
    assert r.status is Status.UNKNOWN and "CBC failed" in r.stats["error"]
