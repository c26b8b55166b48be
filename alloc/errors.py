"""Exceptions.  Every input problem is an [`InputError`][alloc.errors.InputError] with a one-line
message naming the file, the field and what was expected."""
from __future__ import annotations

from typing import Sequence


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

    def __init__(self, problems: str | Sequence[str], source: str | None = None) -> None:
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


class UnsupportedInput(InputError):
    """A solver cannot take this input: it lacks a capability the input needs
    (the message names the capabilities and the solvers that have them).

    Examples
    --------
    >>> from alloc import Cluster, Job, Server, UnsupportedInput, allocate
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> try:
    ...     allocate(cluster, [Job("e", 2, cpu=1000, mem=1000, min_gpus=1)], solver="best-fit")
    ... except UnsupportedInput as exc:
    ...     print(str(exc).split(";")[0])
    solver 'best-fit' does not support elastic which this input needs
    """


class InputWarning(UserWarning):
    """Input that is valid but probably not what was meant (a request below
    its profile's grid, a GPU type its profile does not know): the answer is
    computed, and the warning says what it assumed.

    Examples
    --------
    >>> import warnings
    >>> from alloc import Cluster, InputWarning, Job, Server, allocate
    >>> cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     a = allocate(cluster, [Job("j", 1, cpu=100, mem=100, model="res18")])
    >>> any(issubclass(w.category, InputWarning) for w in seen)
    True
    """


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
