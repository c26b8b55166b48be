"""What an engine returns for a [`LinearModel`][alloc.kernel.model.LinearModel]."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Status


@dataclass
class Result:
    """Outcome of one solve.

    Attributes
    ----------
    status : Status
        ``OPTIMAL`` (proven), ``FEASIBLE`` (a solution, not proven),
        ``INFEASIBLE`` (proven) or ``UNKNOWN`` (no solution, no proof).
    x : numpy.ndarray or None
        Variable values (integer variables rounded) when there is a solution.
    objective : float or None
        Objective value of ``x`` (recomputed from the model, constant included).
    bound : float or None
        A proven bound on the optimum in the model's sense (an upper bound when
        maximising), constant included; None when the engine proved none.
    duals : numpy.ndarray or None
        Row duals of an LP, as ``d objective / d row bound`` (so a binding
        ``<=`` row of a maximisation has a dual ``>= 0``).
    reduced_costs : numpy.ndarray or None
        Column reduced costs of an LP (same sign convention).
    stats : dict
        Engine statistics (wall time, nodes, ...).
    """
    status: Status
    x: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    duals: np.ndarray | None = None
    reduced_costs: np.ndarray | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def has_solution(self) -> bool:
        """True when the engine returned a solution."""
        return self.x is not None

    @property
    def proven(self) -> bool:
        """True when the solution is proven optimal."""
        return self.status is Status.OPTIMAL


__all__ = ["Result"]
