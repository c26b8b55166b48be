"""Heterogeneity-aware, fair time-share policies (Gavel, OSDI'20).

* :func:`load_shares`, :func:`problem_from_dict` -- ``alloc.shares/1`` input.
* :func:`dump_shares_result` -- ``alloc.shares-result/1`` output.
"""
from .io import (Pair, SharesProblem, SharesResult, TenantSpec, dump_shares_result, load_shares,
                 problem_from_dict, problem_to_dict, result_to_dict)

__all__ = ["Pair", "SharesProblem", "SharesResult", "TenantSpec", "dump_shares_result",
           "load_shares", "problem_from_dict", "problem_to_dict", "result_to_dict"]
