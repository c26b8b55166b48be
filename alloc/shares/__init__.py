"""Heterogeneity-aware, fair time-share policies (Gavel, OSDI'20) and the
round mechanism that turns shares into placements.

* [`solve_shares`][alloc.shares.policies.solve_shares] -- a policy by name (`POLICIES`), checked.
* [`load_shares`][alloc.shares.load_shares], [`problem_from_dict`][alloc.shares.problem_from_dict]
  -- ``alloc.shares/1`` input.
* [`dump_shares_result`][alloc.shares.dump_shares_result] -- ``alloc.shares-result/1`` output.
* [`drf_shares`][alloc.shares.drf_shares] -- weighted Dominant Resource Fairness over explicit
  resources by exact progressive filling (`alloc.shares.drf`).
"""
from .drf import drf_shares
from .io import (Pair, SharesProblem, SharesResult, TenantSpec, dump_shares_result, load_shares,
                 problem_from_dict, problem_to_dict, result_to_dict)
from .policies import POLICIES, solve_shares

__all__ = ["POLICIES", "Pair", "SharesProblem", "SharesResult", "TenantSpec", "drf_shares",
           "dump_shares_result", "load_shares", "problem_from_dict", "problem_to_dict",
           "result_to_dict", "solve_shares"]
