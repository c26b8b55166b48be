r"""The conformance suite as one call: hypothesis draws calls over the input
space a solver declares, and every check of `solver_problems` runs on each;
a failure is shrunk to a small counter-example and raised.

* `check_solver` -- one solver, on calls within its capabilities;
* `check_solvers` -- several solvers (default: every registered and
  available one, plug-ins and solvers registered in this process included)
  on shared calls, with the cross-solver checks of `check_across`: the
  solvers are grouped by their capabilities, and each group's calls run every
  solver that handles them, so that every solver runs on all the calls of
  its group -- at least ``1 / groups`` of all.

Both return a `SuiteReport`: how many calls each solver ran on and which
features (`alloc.testing.strategies.features`) the calls exercised.  The
hypothesis settings are those of the active profile, ``max_examples`` and
``time_limit`` overridable per call.  This module needs hypothesis (the
``test`` extra).
"""
from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from hypothesis import HealthCheck, given, settings

from ..errors import InputWarning
from ..registry import get_solver, solvers
from .conformance import applicable_solvers, check_across, solver_problems
from .strategies import Call, calls


@dataclass
class SuiteReport:
    """What a suite run covered.

    Attributes
    ----------
    examples : int
        Calls drawn (shrinking included).
    ran : Counter
        Calls each solver ran on.
    features : Counter
        Calls that exercised each feature.
    groups : int
        Capability groups the calls were drawn for (`check_solvers`).
    """
    examples: int = 0
    ran: Counter = field(default_factory=Counter)
    features: Counter = field(default_factory=Counter)
    groups: int = 1

    def share(self, name: str) -> float:
        """The share of the calls solver ``name`` ran on."""
        return self.ran[name] / self.examples if self.examples else 0.0


def _settings(max_examples: int | None, base: settings | None = None):
    base = base if base is not None else settings()
    return settings(base, max_examples=max_examples or base.max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _fail(call: Call, problems: Sequence[str], known=None) -> None:
    if known is not None:
        problems = [x for x in problems if not known(call, x)]
    if problems:
        from ..io import dump_instance
        raise AssertionError(f"{len(problems)} problem(s) on {describe(call)}:\n  "
                             + "\n  ".join(problems) + "\nThe call: allocate(inst.cluster, "
                             f"inst.jobs, solver=..., **{call.kwargs()!r}) with inst =\n"
                             + dump_instance(call.instance()))


def describe(call: Call) -> str:
    """One line naming a call's size and its features."""
    return (f"{len(call.cluster.servers)} server(s), {len(call.jobs)} job(s), "
            f"objective {call.objective}, seed {call.seed}, features "
            f"{', '.join(sorted(f for f in call.features if not f.startswith('objective')))}")


def check_solver(name: str, *, max_examples: int | None = None, time_limit: float = 5.0,
                 promises: Iterable[str] | None = None, skip: Iterable[str] = (),
                 known: Callable[[Call, str], bool] | None = None,
                 max_servers: int = 3, max_jobs: int = 8,
                 hypothesis_settings: settings | None = None) -> SuiteReport:
    """Run the conformance suite on solver ``name``.

    Parameters
    ----------
    name : str
        A registered solver (a plug-in, or one registered in this process).
    max_examples : int, optional
        Calls to draw (default: the active hypothesis profile's).
    time_limit : float
        Seconds per call.
    promises, skip
        As for `solver_problems`.
    known : callable, optional
        ``known(call, line)``: True for a problem line that is a known
        defect, not reported (keep it narrow, and keep a test that shows the
        defect).
    max_servers, max_jobs
        Size of the drawn calls.
    hypothesis_settings : hypothesis.settings, optional
        Settings to start from instead of the active profile's
        (``derandomize=True`` for a fixed set of calls, say).

    Returns
    -------
    SuiteReport

    Raises
    ------
    AssertionError
        The smallest call hypothesis found on which a check fails, with
        every problem.

    Examples
    --------
    >>> from alloc.testing import check_solver
    >>> report = check_solver("best-fit", max_examples=5)
    >>> report.share("best-fit")
    1.0
    """
    get_solver(name)
    skip = tuple(skip)
    report = SuiteReport()

    def run(call: Call) -> None:
        report.examples += 1
        report.features.update(call.features)
        report.ran[name] += 1
        problems, _ = solver_problems(name, call.cluster, call.jobs, time_limit=time_limit,
                                      promises=promises, skip=skip, **call.kwargs())
        _fail(call, problems, known)

    _drive(run, calls(name, max_servers=max_servers, max_jobs=max_jobs),
           _settings(max_examples, hypothesis_settings), f"check_solver:{name}")
    return report


def _drive(run, strategy, how: settings, key: str) -> None:
    """Run ``run`` over ``strategy`` under ``how``; failing calls are saved
    in the example database under ``key`` (one per solver or group) and
    replayed first next time.  The drawn input's warnings (a request below
    its profile's grid, say) are not shown: drawing them is the point."""
    run._hypothesis_internal_add_digest = key.encode()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        how(given(strategy)(run))()


def capability_groups(names: Iterable[str]) -> list[frozenset]:
    """The distinct capability sets of ``names``, smallest first."""
    reg = solvers()
    return sorted({reg[n].capabilities for n in names}, key=lambda c: (len(c), sorted(c)))


def check_solvers(names: Iterable[str] | None = None, *, max_examples: int | None = None,
                  time_limit: float = 5.0, skip: Iterable[str] = ("determinism", "options"),
                  known: Callable[[Call, str], bool] | None = None,
                  max_servers: int = 3, max_jobs: int = 5,
                  hypothesis_settings: settings | None = None) -> SuiteReport:
    """Run the suite on several solvers at once, with the cross-solver checks.

    Parameters
    ----------
    names : iterable of str, optional
        Solvers (default: every available registered solver).
    max_examples : int, optional
        Calls per capability group (default: the active profile's).
    time_limit : float
        Seconds per solver and call.
    skip : iterable of str
        Checks not to run (default: determinism and options, which
        `check_solver` covers per solver).
    known : callable, optional
        ``known(call, line)``: True for a problem line that is a known
        defect, not reported (as for `check_solver`).
    max_servers, max_jobs
        Size of the drawn calls.
    hypothesis_settings : hypothesis.settings, optional
        As for `check_solver`.

    Returns
    -------
    SuiteReport
        ``ran[name]`` is at least the calls of its group: every solver runs
        on a share ``>= 1 / report.groups`` of the calls.

    Raises
    ------
    AssertionError
        The smallest failing call: every solver's problems and the
        cross-solver ones.
    """
    reg = solvers()
    names = [n for n in (names if names is not None else reg) if reg[n].available]
    groups = capability_groups(names)
    report = SuiteReport(groups=len(groups))
    how = _settings(max_examples, hypothesis_settings)
    for caps in groups:
        _run_group(report, caps, names, how, time_limit, tuple(skip), known, max_servers,
                   max_jobs)
    return report


def _run_group(report: SuiteReport, caps: frozenset, names, how, time_limit, skip, known,
               max_servers, max_jobs) -> None:
    def run(call: Call) -> None:
        report.examples += 1
        report.features.update(call.features)
        results, problems = {}, []
        for n in applicable_solvers(call.cluster, call.jobs, names=names, preempt=call.preempt):
            bad, a = solver_problems(n, call.cluster, call.jobs, time_limit=time_limit,
                                     skip=skip, **call.kwargs())
            report.ran[n] += 1
            problems += bad
            if a is not None:
                results[n] = a
        problems += [f"[across] {x}" for x in check_across(results)]
        _fail(call, problems, known)

    _drive(run, calls(capabilities=caps, max_servers=max_servers, max_jobs=max_jobs),
           how, f"check_solvers:{','.join(sorted(caps))}:{','.join(sorted(names))}")


__all__ = ["SuiteReport", "capability_groups", "check_solver", "check_solvers", "describe"]
