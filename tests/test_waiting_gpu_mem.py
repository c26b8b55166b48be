"""A waiting job whose GPU memory too few GPUs can hold, however empty, is
told so in one line (by `outside_reasons` too, which sees no memory in use)."""
import warnings

import numpy as np
import pytest

from alloc import Cluster, Job, Server, allocate
from alloc.problem import compile_problem
from alloc.waiting import outside_reasons

#: s0's eight GPUs have 16000 MiB, s1's and s2's two 40000 MiB each
CLUSTER = Cluster((Server("s0", 8000, 64000, 8, "V100", gpu_mem=16000),
                   Server("s1", 8000, 64000, 2, "V100", gpu_mem=40000),
                   Server("s2", 8000, 64000, 2, "V100", gpu_mem=40000)))


def _outside(job, caps=("spread",)):
    """`outside_reasons` of ``job`` on the empty cluster."""
    p = compile_problem(CLUSTER, [Job("x", 1, cpu=100, mem=100)])
    free = (np.full(12, 1000), np.full(3, 8000), np.full(3, 64000))
    return outside_reasons(p, free, [job], caps, "x")[0]


def test_a_job_that_needs_more_large_gpus_on_one_server_than_any_has():
    job = Job("q", 4, cpu=100, mem=100, gpu_mem=30000, locality="server")
    assert _outside(job) == ("needs 4 GPUs with 30000 MiB of GPU memory on one server; the "
                             "most such GPUs on one server it may use: 2 (s1)")


def test_a_spread_job_that_needs_more_large_gpus_than_the_cluster_has():
    job = Job("r", 6, cpu=100, mem=100, gpu_mem=30000)
    assert _outside(job) == ("needs 6 GPUs with 30000 MiB of GPU memory; the cluster has 4 "
                             "such GPUs it may use")


def test_a_solver_that_does_not_spread_says_so():
    job = Job("t", 3, cpu=100, mem=100, gpu_mem=30000)
    assert _outside(job, ()).endswith(
        "2 (s1) (this solver does not spread a job over servers)")
    assert _outside(job).startswith("left waiting by x's rule")   # it fits spread


def test_a_job_that_may_spill_or_fits_gets_the_usual_line():
    for job in (Job("v", 4, cpu=100, mem=100, gpu_mem=30000, gpu_mem_min=8000),
                Job("w", 2, cpu=100, mem=100, gpu_mem=30000)):
        assert _outside(job).startswith("left waiting by x's rule"), job.id


@pytest.mark.parametrize("solver", ["hived", "antman"])
def test_a_solver_answer_gives_the_same_line(solver):
    job = Job("q", 4, cpu=100, mem=100, gpu_mem=30000, locality="server")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = allocate(CLUSTER, [job], solver=solver)
    assert a.reasons["q"] == _outside(job)
