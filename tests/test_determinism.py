"""`deterministic=True` on cpsat: one worker, the seed fixed, CP-SAT stopped by
its work count; the same input, seed and limit give the same answer."""
from alloc import allocate, load_instance, solvers


def test_cpsat_declares_the_switch():
    opts = {o.name: o for o in solvers()["cpsat"].options}
    assert "deterministic" in opts and opts["deterministic"].default is False


def test_same_input_same_limit_same_answer():
    inst = load_instance("tiny-types")
    runs = [allocate(inst.cluster, inst.jobs, solver="cpsat", time_limit=10, seed=3,
                     deterministic=True) for _ in range(2)]
    a, b = runs
    assert (a.status, a.value, a.bound) == (b.status, b.value, b.bound)
    assert a.placements == b.placements
