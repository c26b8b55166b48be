"""Fuzzing alloc against its own promises (``python bench/fuzz.py``).

* `generate` -- random instances over every feature, shares problems,
  mutations into malformed files;
* `brute` -- the optimum of a tiny instance by exhaustive search;
* `campaign` -- the runs, the checks and their counts.
"""
from .campaign import CHECKS, Tally, campaign

__all__ = ["CHECKS", "Tally", "campaign"]
