"""One call: the settings and the input of [`allocate`][alloc.solve.allocate]
and of a [`Session`][alloc.session.Session], validated once, by one code path.

Both entry points build a [`Call`][alloc.call.Call] with
[`make_call`][alloc.call.make_call] before anything else, so that the same bad
input raises the same error class with the same message from both
(``tests/test_one_call.py`` compares them over many bad inputs).  The steps,
in this order (the first problem found is the one reported):

1. the solver: its name (`alloc.registry.get_solver`), the call's ``preempt``
   passed to a solver that declares its own ``preempt`` option, its declared
   options (`alloc.options.validate_options`);
2. the objective's name, and a warning when the solver does not honour it;
3. ``time_limit`` (a positive number of seconds, or None), then ``seed``,
   ``max_moves`` and ``move_cost`` (`alloc.validate.check_call_settings`);
4. the solver's backend installed (else `SolverUnavailable`);
5. the cluster and the jobs (`alloc.validate.prepare`: every problem by
   meaning, model names resolved to profiles);
6. ``preempt`` (a rule that applies to this input) and ``preempt_packed``;
7. the capabilities the input needs (`needed_capabilities`), computed once and
   carried in the call, against the solver's (else `UnsupportedInput` naming
   the missing ones and the solvers that have them).

Every error is an [`InputError`][alloc.errors.InputError] (a ``ValueError``)
of one line, but `SolverUnavailable`.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .deadline import check_time_limit
from .errors import InputError, InputWarning, SolverUnavailable, UnsupportedInput
from .model import Cluster, Job
from .needs import needed_capabilities
from .objectives import DEFAULT_OBJECTIVE, Objective, get_objective
from .options import validate_options
from .registry import SolverInfo, get_solver, objective_warning, solvers
from .validate import check_call_settings, short_repr


@dataclass(frozen=True)
class Call:
    """A validated call (see the module notes).

    Attributes
    ----------
    info : SolverInfo
        The solver's declaration.
    options : dict
        Its options, checked, defaults filled in.
    objective : Objective
        What to maximise.
    time_limit : float or None
        Seconds for the call (or for each round of a session); None: the default.
    seed : int
        The random seed.
    max_moves : int or None
        Running jobs that may move.
    move_cost : float or None
        Objective units per move.
    preempt : str or None
        The call's preemption rule (``"order"`` or None).
    preempt_packed : bool
        Under ``preempt="order"``, a gang's victims on one server first.
    cluster : Cluster
        The cluster, validated (GPU types filled in).
    jobs : tuple of Job
        The jobs, validated, model names resolved.
    needs : frozenset of str
        The capabilities the input and the preemption rule need.
    """
    info: SolverInfo
    options: dict[str, Any]
    objective: Objective
    time_limit: float | None
    seed: int
    max_moves: int | None
    move_cost: float | None
    preempt: str | None
    preempt_packed: bool
    cluster: Cluster
    jobs: tuple[Job, ...]
    needs: frozenset[str]


@dataclass(frozen=True)
class Settings:
    """A call's settings, validated (steps 1-4 of the module notes): the
    fields of [`Call`][alloc.call.Call] but the input's."""
    info: SolverInfo
    options: dict[str, Any]
    objective: Objective
    time_limit: float | None
    seed: int
    max_moves: int | None
    move_cost: float | None
    preempt: Any
    preempt_packed: Any


def make_call(cluster: Cluster, jobs: Sequence[Job], *, solver: str = "best-fit",
              objective: str | None = None, time_limit: float | None = None, seed: int = 0,
              max_moves: int | None = None, move_cost: float | None = None,
              preempt: str | None = None, preempt_packed: bool = False,
              options: Mapping[str, Any] | None = None, stacklevel: int = 3) -> Call:
    """The [`Call`][alloc.call.Call] of these settings and this input (the
    steps of the module notes, in order): `call_input` of `call_settings`.

    Raises
    ------
    InputError
        The first problem found, in one line (`UnsupportedInput` for a
        capability the solver lacks).
    SolverUnavailable
        The solver's backend is not installed.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> c = make_call(cl, [Job("a", 1, cpu=1000, mem=1000, gpu_milli=500)])
    >>> c.info.name, sorted(c.needs)
    ('best-fit', ['sharing'])
    >>> make_call(cl, [], seed="x")
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: seed: expected an integer, got 'x'
    """
    settings = call_settings(solver=solver, objective=objective, time_limit=time_limit,
                             seed=seed, max_moves=max_moves, move_cost=move_cost,
                             preempt=preempt, preempt_packed=preempt_packed, options=options,
                             stacklevel=stacklevel + 1)
    return call_input(settings, cluster, jobs)


def call_settings(*, solver: str = "best-fit", objective: str | None = None,
                  time_limit: float | None = None, seed: int = 0, max_moves: int | None = None,
                  move_cost: float | None = None, preempt: str | None = None,
                  preempt_packed: bool = False, options: Mapping[str, Any] | None = None,
                  stacklevel: int = 3) -> Settings:
    """Steps 1-4 of the module notes: the settings alone, before the input.

    Examples
    --------
    >>> call_settings(solver="hived", preempt=True).options["preempt"]
    True
    """
    info, opts, preempt = solver_call(solver, preempt, dict(options or {}))
    try:
        obj = get_objective(DEFAULT_OBJECTIVE if objective is None else objective)
        if time_limit is not None:
            check_time_limit(time_limit)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if objective is not None:
        warn_ignored_objective(info, obj.name, stacklevel=stacklevel + 1)
    check_call_settings(seed, max_moves, move_cost)
    reason = info.unavailable_reason()
    if reason:
        raise SolverUnavailable(f"solver {info.name!r} is unavailable: {reason}")
    return Settings(info, opts, obj, time_limit, seed, max_moves, move_cost, preempt,
                    preempt_packed)


def call_input(settings: Settings, cluster: Cluster, jobs: Sequence[Job]) -> Call:
    """Steps 5-7 of the module notes: the input under validated settings.

    Examples
    --------
    >>> from alloc import Cluster, Job, Server
    >>> cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    >>> call_input(call_settings(), cl, [Job("a", 3, cpu=1, mem=1)]).jobs[0].gpus
    3
    """
    from .validate import prepare
    cluster, jobs = prepare(cluster, jobs)
    preempt, packed = settings.preempt, settings.preempt_packed
    check_preempt(cluster, jobs, preempt)
    if not isinstance(packed, bool):
        raise InputError(f"preempt_packed: expected true or false, got {short_repr(packed)}")
    needs = needed_capabilities(cluster, jobs, preempt)
    check_capabilities(settings.info, needs)
    s = settings
    return Call(s.info, s.options, s.objective, s.time_limit, s.seed, s.max_moves, s.move_cost,
                preempt, packed, cluster, jobs, needs)


def solver_call(solver: str, preempt: Any, options: dict[str, Any]
                ) -> tuple[SolverInfo, dict[str, Any], Any]:
    """The solver's declaration, its checked options and the call's
    ``preempt`` (a solver's own ``preempt`` option passes through to it).

    Examples
    --------
    >>> info, opts, rule = solver_call("hived", True, {})
    >>> opts["preempt"], rule
    (True, None)
    """
    try:
        info = get_solver(solver)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if preempt is not None and preempt != "order" and \
            any(o.name == "preempt" for o in info.options):
        options, preempt = {**options, "preempt": preempt}, None   # the solver's own option
    try:
        opts = validate_options(f"solver {solver!r}", info.options, options)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return info, opts, preempt


def check_capabilities(info: SolverInfo, needs: frozenset[str], where: str = "") -> None:
    """`UnsupportedInput` naming the capabilities in ``needs`` the solver
    lacks and the solvers that have them (``where`` prefixes the line).

    Examples
    --------
    >>> check_capabilities(get_solver("best-fit"), frozenset({"tenancy"}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    alloc.errors.UnsupportedInput: solver 'best-fit' does not support tenancy which this input ...
    """
    missing = needs - info.capabilities
    if missing:
        able = [n for n, s in solvers().items() if missing <= s.capabilities]
        raise UnsupportedInput(f"{where + ': ' if where else ''}solver {info.name!r} does not "
                               f"support {', '.join(sorted(missing))} which this input needs; "
                               f"solvers that do: {', '.join(able) or 'none'}")


def check_preempt(cluster: Cluster, jobs: Sequence[Job], preempt: Any) -> None:
    """One-line ``InputError`` unless ``preempt`` is a preemption rule that
    applies to this input (``"order"``: no tenants, no guaranteed jobs).

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> check_preempt(Cluster((Server("s0", cpu=1, mem=1, gpus=1),)), [], "order")
    """
    from .preempt import PREEMPT_RULES
    if preempt not in PREEMPT_RULES or isinstance(preempt, bool):
        raise InputError(f"preempt: expected one of {', '.join(map(repr, PREEMPT_RULES))}, "
                         f"got {short_repr(preempt)}")
    if preempt == "order" and (cluster.tenants or any(j.guaranteed for j in jobs)):
        raise InputError("preempt: 'order' ranks work on clusters without tenants' guarantees; "
                         "with tenants or guaranteed jobs preemption follows the tenancy rules "
                         "(leave preempt unset)")


def warn_ignored_objective(info: SolverInfo, objective: str, stacklevel: int = 3) -> None:
    """One `InputWarning` line when the caller asked solver ``info`` for an
    ``objective`` it does not honour, naming the solvers that do.

    Examples
    --------
    >>> warn_ignored_objective(get_solver("cpsat"), "gpus")
    """
    msg = objective_warning(info, objective)
    if msg:
        warnings.warn(msg, InputWarning, stacklevel=stacklevel)


__all__ = ["Call", "Settings", "call_input", "call_settings", "check_capabilities", "check_preempt", "make_call", "needed_capabilities",
           "solver_call", "warn_ignored_objective"]
