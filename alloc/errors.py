"""Exceptions.  Every input problem is an :class:`InputError` with a one-line
message naming the file, the field and what was expected."""
from __future__ import annotations


class AllocError(Exception):
    """Base class of alloc's errors.

    Examples
    --------
    >>> from alloc import AllocError, InputError, SolverError
    >>> issubclass(InputError, AllocError) and issubclass(SolverError, AllocError)
    True
    """


class InputError(AllocError, ValueError):
    """Bad input: a file, a field, and what was expected.

    ``problems`` holds every problem found (validation collects them in one
    pass); ``str()`` gives the first one and how many more there are.

    Examples
    --------
    >>> from alloc import InputError
    >>> err = InputError(["jobs[0].gpus: expected an integer >= 0, got -1", "jobs[1].id: missing"],
    ...                  "my.json")
    >>> str(err)
    'my.json: jobs[0].gpus: expected an integer >= 0, got -1 (and 1 more problem)'
    >>> isinstance(err, ValueError), len(err.problems)
    (True, 2)
    """

    def __init__(self, problems, source: str | None = None):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        self.source = source
        super().__init__(self._message())

    def _message(self) -> str:
        first = self.problems[0] if self.problems else "invalid input"
        if self.source and not first.startswith(self.source):
            first = f"{self.source}: {first}"
        more = len(self.problems) - 1
        return first + (f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else "")


class SolverError(AllocError, RuntimeError):
    """A solver failed or returned a placement that breaks a hard constraint.

    Examples
    --------
    >>> from alloc import SolverError
    >>> try:
    ...     raise SolverError("solver 'mine' returned job 'j1' twice")
    ... except SolverError as exc:
    ...     print(exc)
    solver 'mine' returned job 'j1' twice
    """


class SolverUnavailable(AllocError, RuntimeError):
    """The solver's backend is not installed.

    Examples
    --------
    >>> from alloc import SolverUnavailable, get_solver
    >>> info = get_solver("milp-cbc")
    >>> info.unavailable_reason() is None or issubclass(SolverUnavailable, Exception)
    True
    """


def install_hint(extra: str, packages: str) -> str:
    """How to install an optional extra, without assuming alloc came from an index.

    Examples
    --------
    >>> install_hint("ray", "ray")
    "pip install ray (alloc's 'ray' extra; in a clone of alloc: pip install '.[ray]')"
    """
    return f"pip install {packages} (alloc's {extra!r} extra; in a clone of alloc: " \
           f"pip install '.[{extra}]')"
