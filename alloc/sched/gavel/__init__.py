"""Gavel's simulator policies (Narayanan et al., OSDI'20) as shares policies
of the registry: each is one of `alloc.shares`' time-share policies with
Gavel's settings fixed (`alloc.sched.gavel.presets`), so that a stack names
it as one policy (``shares="gavel-las"``) and `alloc.sim.gavel`'s
experiments take it by name.

* ``gavel-las`` (also ``gavel-max-min``): Gavel's LAS, max-min fairness
  over normalised throughputs with priority weights 1 (the paper's §4.1);
  ``gavel-las-agnostic`` (``gavel-max-min-agnostic``) over the
  heterogeneity-agnostic throughputs; ``gavel-las-ss`` with space sharing;
  ``gavel-las-attained`` with each job weighed by the inverse of its
  attained service;
* ``gavel-ftf`` (finish-time fairness), ``gavel-max-sum``,
  ``gavel-makespan``, ``gavel-water-filling``, ``gavel-fifo``,
  ``gavel-isolated``, ``gavel-gandiva`` (random packing of pairs, with space
  sharing) and ``gavel-allox``.

Examples
--------
>>> from alloc.sched import get_policy
>>> p = get_policy("shares", "gavel-las-ss").build()
>>> p.policy, p.space_sharing, p.weights
('max-min', True, 'equal')
"""
from ...options import Option
from ..registry import declare

_P = (Option("time_limit", "float", 30.0, "seconds each solve may take", minimum=0.001),
      Option("seed", "int", 0, "seed of randomised policies (plus the round number)"))
_M = "alloc.sched.gavel.presets"
_NEEDS = ("throughput",)


def _d(name: str, fn: str, summary: str, needs: tuple = _NEEDS):
    return declare("shares", name, f"{_M}:{fn}", needs=needs, params=_P, summary=summary)


POLICIES = (
    _d("gavel-las", "las", "Gavel's LAS: max-min fairness, priority weights 1"),
    _d("gavel-max-min", "las", "Gavel's max-min fairness (another name of gavel-las)"),
    _d("gavel-las-agnostic", "las_agnostic", "Gavel's LAS, heterogeneity-agnostic"),
    _d("gavel-max-min-agnostic", "las_agnostic",
       "Gavel's max-min fairness, heterogeneity-agnostic"),
    _d("gavel-las-ss", "las_ss", "Gavel's LAS with space sharing (pairs)", ("throughput", "pairs")),
    _d("gavel-las-attained", "las_attained",
       "Gavel's LAS, each job weighed by the inverse of its attained service"),
    _d("gavel-ftf", "ftf", "Gavel's finish-time fairness", ("throughput", "duration")),
    _d("gavel-max-sum", "max_sum", "Gavel's total throughput"),
    _d("gavel-makespan", "makespan", "Gavel's minimum makespan", ("throughput", "duration")),
    _d("gavel-water-filling", "water_filling", "Gavel's leximin of the max-min values"),
    _d("gavel-fifo", "fifo", "Gavel's FIFO: arrival order, fastest type with free GPUs"),
    _d("gavel-isolated", "isolated", "Gavel's isolated shares: 1/m of every type"),
    _d("gavel-gandiva", "gandiva", "Gavel's Gandiva: time slicing with random packing of pairs",
       ("throughput", "pairs")),
    _d("gavel-allox", "allox", "Gavel's AlloX: min-cost matching to (type, position) slots",
       ("throughput", "duration")),
)
