"""The one policy registry: listing, lookup errors, run-time registration,
the built-in orders and ``alloc policies``."""
import json
from types import SimpleNamespace as J

import pytest

from alloc import Cluster
from alloc.cli import main
from alloc.errors import InputError
from alloc.sched import (KINDS, Context, KeyOrder, Size, get_policy, policies, policy,
                         register_policy, unregister_policy)

CTX = Context(100.0, 1, Cluster(()))


def job(jid, arrival, gpus=1, attained=0.0, remaining=None):
    return J(id=jid, arrival_s=float(arrival), gpus=gpus, attained_gpu_s=float(attained),
             remaining_s=remaining)


def test_every_kind_is_known_and_listed_in_order():
    kinds = [p.kind for p in policies()]
    assert kinds == sorted(kinds, key=KINDS.index)
    assert {"order", "placement", "shares"} <= set(kinds)


def test_solvers_are_placement_policies():
    from alloc.registry import solvers
    assert {p.name for p in policies("placement")} == set(solvers())


def test_unknown_and_wrong_kind_are_one_line_errors():
    with pytest.raises(InputError, match="unknown order policy 'nope'; order policies: .*fifo"):
        get_policy("order", "nope")
    with pytest.raises(InputError, match="'best-fit' is a placement policy, not an order policy"):
        get_policy("order", "best-fit")
    with pytest.raises(InputError, match="policy kind: expected one of"):
        policies("kinds")


def test_parameters_are_validated_with_the_option_template():
    with pytest.raises(InputError, match="order policy 'las': unknown option 'quantum'"):
        get_policy("order", "las").build(quantum=3)
    with pytest.raises(InputError, match="order policy 'las': option 'preemptive': expected"):
        get_policy("order", "las").build(preemptive=3)
    assert get_policy("order", "fifo").build(preemptive=False).preemptive is False


def test_basic_orders_rank():
    jobs = [job("a", 0, attained=50, remaining=30), job("b", 5, attained=10, remaining=None),
            job("c", 9, attained=10, remaining=5)]
    rank = {n: get_policy("order", n).build().rank(jobs, CTX) for n in ("fifo", "srtf", "las")}
    assert rank == {"fifo": ["a", "b", "c"], "srtf": ["c", "a", "b"], "las": ["b", "c", "a"]}


def test_registered_policy_is_listed_built_and_removed():
    @policy("order", "widest", summary="most GPUs first")
    class Widest(KeyOrder):
        def key(self, job, ctx):
            return -job.gpus
    register_policy(Widest)
    try:
        assert ("order", "widest") in {(p.kind, p.name) for p in policies()}
        assert get_policy("order", "widest").build().rank([job("a", 0), job("b", 1, 4)], CTX) \
            == ["b", "a"]
        with pytest.raises(ValueError, match="already registered"):
            register_policy(Widest)
    finally:
        unregister_policy("order", "widest")
    with pytest.raises(InputError):
        get_policy("order", "widest")


def test_a_factory_that_raises_is_named():
    @policy("order", "broken-order")
    def broken():
        raise RuntimeError("boom")
    register_policy(broken)
    try:
        with pytest.raises(InputError, match="order policy 'broken-order' failed to build: "
                                             "RuntimeError: boom"):
            get_policy("order", "broken-order").build()
    finally:
        unregister_policy("order", "broken-order")


def test_size_is_checked():
    assert Size(2, nodes=1).gpus == 2
    for bad in (dict(gpus=-1), dict(gpus=1, nodes=0), dict(gpus=1, accum=-1)):
        with pytest.raises(ValueError, match="Size"):
            Size(**bad)


def test_cli_lists_kind_and_name(capsys):
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "order fifo" in lines and "placement best-fit" in lines
    assert all(len(line.split()) == 2 and line.split()[0] in KINDS for line in lines)
    assert main(["policies", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"kind", "name", "summary"} <= set(rows[0])
    assert main(["policies", "--kind", "nope"]) == 2
