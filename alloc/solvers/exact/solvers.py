"""The exact family's registered solvers: one driver, three engines."""
from __future__ import annotations

from ...deadline import Deadline
from ...problem import Problem, Solution
from .driver import solve_exact
from .engine import Engine


def solve_cpsat(problem: Problem, *, deadline: Deadline, seed: int = 0, warm_share: float = 0.15,
                cg_share: float = 0.45, workers: int = 1) -> Solution:
    """``cpsat``: the configuration model with CP-SAT masters and pricing."""
    return solve_exact(problem, Engine("cpsat", workers), deadline=deadline, seed=seed,
                       warm_share=warm_share, cg_share=cg_share)


def solve_milp(problem: Problem, *, deadline: Deadline, seed: int = 0, warm_share: float = 0.15,
               cg_share: float = 0.45) -> Solution:
    """``milp``: the configuration model with HiGHS masters and pricing."""
    return solve_exact(problem, Engine("highs"), deadline=deadline, seed=seed,
                       warm_share=warm_share, cg_share=cg_share)


def solve_cbc(problem: Problem, *, deadline: Deadline, seed: int = 0, warm_share: float = 0.15,
              cg_share: float = 0.45) -> Solution:
    """``milp-cbc``: the configuration model with CBC masters and pricing."""
    return solve_exact(problem, Engine("cbc"), deadline=deadline, seed=seed,
                       warm_share=warm_share, cg_share=cg_share)
