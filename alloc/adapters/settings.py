"""The [Session][alloc.session.Session] settings an adapter passes through,
checked when the adapter is made.

An adapter builds its session when it first sees the cluster (Blox's first
round, Slurm's first cycle), inside the scheduler's loop.  A solver that
cannot run there (its backend is not installed), an option it does not
declare, an objective that does not exist or a setting out of range would then
surface in the loop; `check_session_settings` raises it when the adapter is
made instead, with the session's own checks: it builds a session with those
settings on a one-GPU probe cluster and throws it away.
"""
from __future__ import annotations

import inspect
import warnings
from typing import Any, Iterable, Mapping

from ..errors import InputError
from ..model import DEFAULT_GPU_TYPE, Cluster, Server

#: Session keywords no adapter passes through: the adapter's own.
OWN = ("cluster", "jobs", "gpu_keys", "name", "order")


def session_keywords() -> tuple[str, ...]:
    """The keyword settings [Session][alloc.session.Session] takes, in its order.

    Examples
    --------
    >>> from alloc.adapters.settings import session_keywords
    >>> {"solver", "objective", "preempt"} <= set(session_keywords())
    True
    """
    from ..session import Session
    params = inspect.signature(Session.__init__).parameters.values()
    return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def make_session(cluster: Cluster, settings: Mapping[str, Any], **own: Any):
    """The adapter's session: ``settings`` (checked by `check_session_settings`
    when the adapter was made, its warnings given then) and the adapter's own
    keywords.

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> from alloc.adapters.settings import make_session
    >>> s = make_session(Cluster((Server("n0", 1000, 1, 4),)), {"solver": "best-fit"},
    ...                  name="mine")
    >>> s.solver, s.name
    ('best-fit', 'mine')
    """
    from ..errors import InputWarning
    from ..session import Session
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        return Session(cluster, **settings, **own)


def check_session_settings(settings: Mapping[str, Any], where: str,
                           own: Iterable[str] = OWN) -> dict[str, Any]:
    """``settings`` checked as [Session][alloc.session.Session] keywords now.

    Parameters
    ----------
    settings : mapping
        Session keywords (``solver``, ``objective``, ``time_limit``,
        ``options``, ``max_moves``, ``move_cost``, ``preempt``, ``seed``,
        ``models`` and any other the session takes).
    where : str
        Names the adapter in error lines.
    own : iterable of str
        Keywords the adapter sets itself (refused).

    Returns
    -------
    dict
        The settings, unchanged.

    Raises
    ------
    InputError
        An unknown keyword, one the adapter sets, or what the session refuses
        (one line each).
    SolverUnavailable
        The solver cannot run here (one line saying how to install it).

    Examples
    --------
    >>> from alloc.adapters.settings import check_session_settings
    >>> check_session_settings({"solver": "best-fit", "max_moves": 2}, "blox")
    {'solver': 'best-fit', 'max_moves': 2}
    >>> check_session_settings({"solvr": "best-fit"}, "blox")
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: blox: unknown session setting 'solvr'; expected some of ...
    """
    from ..session import Session
    known = session_keywords()
    for key in settings:
        if key in own:
            raise InputError(f"{where}: {key!r} is the adapter's own; it cannot be passed")
        if key not in known:
            raise InputError(f"{where}: unknown session setting {key!r}; expected some of "
                             f"{', '.join(k for k in known if k not in own)}")
    probe = Cluster((Server("probe", 1000, 1, 1, DEFAULT_GPU_TYPE),))
    Session(probe, name=where, **settings)
    return dict(settings)


__all__ = ["OWN", "check_session_settings", "make_session", "session_keywords"]
