r"""Reductions with inverses, composed in one chain.

A reduction maps a problem ``P`` (a compiled problem, or a call: cluster,
jobs, order) to a simpler one and back:

$$
\text{apply}: P \mapsto (P', d), \qquad
\text{invert}: (A', d) \mapsto A,
$$

where ``A'`` answers ``P'`` and ``A`` answers ``P``; ``d`` is what the
reduction must remember to go back.  A reduction that has nothing to do
returns ``d = None`` and its ``invert`` is the identity.  A chain
``R_1, ..., R_k`` applies them in order, ``P_i = R_i(P_{i-1})``, and inverts
in the reverse order, ``A_{i-1} = R_i^{-1}(A_i, d_i)``; the solver sees only
``P_k``.

Examples
--------
>>> from alloc.reductions import Chain
>>> class Double:
...     def apply(self, x):
...         return 2 * x, x
...     def invert(self, a, d):
...         return a - d
>>> x, data = Chain((Double(), Double())).apply(3)
>>> x, Chain((Double(), Double())).invert(x, data)
(12, 3)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence


class Reduction(Protocol):
    """``apply(problem) -> (reduced, data)`` and ``invert(answer, data) ->
    answer`` (``data`` None: nothing was reduced)."""

    def apply(self, problem: Any) -> tuple[Any, Any]:
        """The reduced problem and the data its inverse needs."""

    def invert(self, answer: Any, data: Any) -> Any:
        """The answer to the problem as posed."""


@dataclass(frozen=True)
class Chain:
    """Reductions applied in order and inverted in the reverse order."""
    steps: Sequence[Reduction]

    def apply(self, problem: Any) -> tuple[Any, list[Any]]:
        """The last reduced problem and each step's data, in order."""
        data = []
        for step in self.steps:
            problem, d = step.apply(problem)
            data.append(d)
        return problem, data

    def invert(self, answer: Any, data: Sequence[Any]) -> Any:
        """The answer to the first problem; a step whose data is None is
        skipped."""
        for step, d in reversed(list(zip(self.steps, data))):
            if d is not None:
                answer = step.invert(answer, d)
        return answer


__all__ = ["Chain", "Reduction"]
