"""An elastic job whose smallest size fits no one server but whose larger
sizes fit spread over servers is placeable at compile time."""
from alloc import Cluster, Job, Server, allocate
from alloc.problem import compile_problem, placeable_reason

CLUSTER = Cluster((Server("a", 32000, 512000, 8, "V100"), Server("b", 32000, 512000, 8, "V100")))


def test_an_elastic_job_that_fits_only_spread_is_placeable():
    job = Job("e", 4, cpu=4000, mem=600000, min_gpus=1)
    assert placeable_reason(CLUSTER, job) is None
    p = compile_problem(CLUSTER, [job])
    assert p.pending == (0,) and not p.reasons


def test_a_job_that_may_not_spread_or_fits_no_spread_keeps_its_reason():
    for job in (Job("one", 4, cpu=4000, mem=600000, min_gpus=1, max_gpus=1),
                Job("local", 4, cpu=4000, mem=600000, min_gpus=1, locality="server"),
                Job("big", 4, cpu=4000, mem=1100000, min_gpus=1)):
        assert placeable_reason(CLUSTER, job) is not None, job.id


def test_jobs_differing_only_in_their_largest_size_get_their_own_test():
    jobs = [Job("one", 4, cpu=4000, mem=600000, min_gpus=1, max_gpus=1),
            Job("grows", 4, cpu=4000, mem=600000, min_gpus=1, max_gpus=4)]
    p = compile_problem(CLUSTER, jobs)
    assert p.pending == (1,) and list(p.reasons) == [0]


def test_its_waiting_line_says_it_fits_spread():
    """gandiva admits an elastic job at its smallest size only: it leaves
    the job out by its own rule, the empty cluster holding it spread."""
    a = allocate(CLUSTER, [Job("e", 4, cpu=4000, mem=600000, min_gpus=1)], solver="gandiva")
    assert a.reasons["e"].startswith("left waiting by gandiva's rule though it fits the room")
    assert a.reasons["e"].endswith("spread over servers at 2 GPUs, the cluster has 2 usable")
