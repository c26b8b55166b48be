"""cpsat-tenancy on the shipped tenancy instances: valid bound, never worse than
hived, honest status, tenancy invariants (checked by allocate())."""
import pytest

from alloc import allocate, load_instance, violations


@pytest.mark.parametrize("name", ["tenancy_small", "tenancy_colocate"])
def test_bound_and_warm_start(instances_dir, name):
    inst = load_instance(instances_dir / f"{name}.json")
    h = allocate(inst.cluster, inst.jobs, solver="hived")
    r = allocate(inst.cluster, inst.jobs, solver="cpsat-tenancy", time_limit=10)
    assert not violations(inst.cluster, inst.jobs, r)
    assert r.value >= h.value - 1e-6
    assert r.bound is not None and r.value <= r.bound + 1e-6
    assert r.stats["lp_bound"] is not None
    if r.status.value == "optimal":
        assert r.value >= r.bound - 1e-6 * max(1.0, r.bound)


def test_penalised_objective_reports_raw_value(instances_dir):
    inst = load_instance(instances_dir / "tenancy_small.json")
    r = allocate(inst.cluster, inst.jobs, solver="cpsat-tenancy", time_limit=10,
                 preemption_cost=0.5)
    assert r.bound is None and r.status.value == "feasible"
    assert abs(r.stats["raw_value"] - r.value) < 1e-6
    pb = r.stats["penalised_bound"]
    assert pb is None or r.stats["penalised"] <= pb + 1e-6


def test_small_instance_decodes_every_model_placement(instances_dir):
    inst = load_instance(instances_dir / "tenancy_small.json")
    r = allocate(inst.cluster, inst.jobs, solver="cpsat-tenancy", time_limit=10)
    assert r.stats["decode_misses"] == 0
    assert r.status.value == "optimal" and r.value == pytest.approx(r.bound, rel=1e-6)


def test_large_instance_neighbourhood_search(instances_dir):
    """Past 100 jobs phase 2 runs a neighbourhood search: the answer stays
    valid, never below hived, under the (whole-model) bound, not claimed optimal
    unless proven."""
    inst = load_instance(instances_dir / "tenancy_64x8.json")
    h = allocate(inst.cluster, inst.jobs, solver="hived")
    r = allocate(inst.cluster, inst.jobs, solver="cpsat-tenancy", time_limit=10)
    assert not violations(inst.cluster, inst.jobs, r)
    assert r.value >= h.value - 1e-6
    assert r.bound is not None and r.value <= r.bound + 1e-6
    if r.stats["cp_status"] == "FEASIBLE":
        assert "lns_improvements" in r.stats and r.status.value == "feasible"
