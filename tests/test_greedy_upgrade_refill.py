"""greedy-upgrade leaves no job out that fits the room its answer leaves,
even when the option upgrade frees room after the job was tried."""
import warnings

from alloc import Cluster, Job, Server, allocate
from alloc.errors import InputWarning
from alloc.model import Profile
from alloc.testing import idle_room_problems


def _case():
    """s0's GPUs are two short of the 3-GPU job ``wide`` and s1 has no memory
    for it, until the upgrade moves ``flat`` on s1 to a point of 8192 MiB
    (its profile is as fast there): then ``wide`` fits spread over both."""
    cluster = Cluster((Server("s0", 16000, 524288, 4, "V100"),
                       Server("s1", 8000, 65536, 4, "V100")))
    small = Profile("small", (500, 1000), (32768, 131072), ((1.06, None), (2.26, 1.0)))
    flat = Profile("flat", (3000, 4000), (8192, 65536, 131072),
                   ((1.0, 1.0, 1.0), (None, None, 2.17)))
    jobs = [Job("small", 1, cpu=1000, mem=64000, model="small", profile=small, priority=-1,
                weight=0.5),
            Job("flat", 1, cpu=1000, mem=64000, model="flat", profile=flat, priority=1),
            Job("wide", 3, cpu=9000, mem=49152, model="res18", priority=-1),
            Job("first", 1, cpu=3000, mem=16384, model="res50", weight=2.0)]
    return cluster, jobs


def test_a_job_the_upgrade_made_room_for_is_placed():
    cluster, jobs = _case()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        a = allocate(cluster, jobs, solver="greedy-upgrade", time_limit=5)
    assert idle_room_problems(cluster, jobs, a) == []
    wide = next(p for p in a.placements if p.job == "wide")
    assert sorted(wide.cpu) == ["s0", "s1"]
