"""The partitioned exact driver does not wait for a part past its timeout."""
from __future__ import annotations

import time

from alloc.engines.configuration import partition


def slow_or_fast(task):
    """A part that runs long (``"slow"``) or answers at once."""
    if task == "slow":
        time.sleep(3)
    return {task: ()}, {"status": "optimal"}


def test_a_late_part_is_left_out(monkeypatch):
    monkeypatch.setattr(partition, "solve_part", slow_or_fast)
    t0 = time.perf_counter()
    out = partition._run(["slow", "fast"], "process", None, timeout=0.5)
    assert time.perf_counter() - t0 < 2.5
    assert out == [partition.LATE, ({"fast": ()}, {"status": "optimal"})]


def test_parts_in_time_all_answer(monkeypatch):
    monkeypatch.setattr(partition, "solve_part", slow_or_fast)
    out = partition._run(["a", "b"], "process", None, timeout=5.0)
    assert [r[0] for r in out] == [{"a": ()}, {"b": ()}]
