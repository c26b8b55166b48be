"""One of each: the share policies' options go through the one option
validator; the session quotes values with the public `short_repr`; the FGD
engine and the sweep config reuse the core's `MILLI` and `read_json`."""
import pytest

from alloc.errors import InputError
from alloc.model import MILLI
from alloc.shares.policies import POLICIES, _options
from alloc.options import Option
from alloc.validate import short_repr


def test_policy_options_are_declared_options():
    for name, spec in POLICIES.items():
        assert all(isinstance(o, Option) for o in spec.options), name


def test_policy_options_read_texts_and_fill_defaults():
    spec = POLICIES["hierarchical"]
    assert _options("hierarchical", spec, {}) == {"within": "fairness", "space_sharing": True}
    assert _options("hierarchical", spec, {"space_sharing": "no", "within": "fifo"}) == \
        {"within": "fifo", "space_sharing": False}
    assert _options("max-min", POLICIES["max-min"], {"space_sharing": False}) == \
        {"space_sharing": False}


@pytest.mark.parametrize("opts, match", [
    ({"space_sharin": True}, r"policy max-min: unknown option 'space_sharin' \(did you mean "
                             r"'space_sharing'\?\)"),
    ({"space_sharing": "maybe"}, r"policy max-min: option 'space_sharing': expected"),
])
def test_policy_option_errors_are_one_input_error_line(opts, match):
    with pytest.raises(InputError, match=match) as exc:
        _options("max-min", POLICIES["max-min"], opts)
    assert "\n" not in str(exc.value)


def test_within_choices():
    with pytest.raises(InputError, match="within"):
        _options("hierarchical", POLICIES["hierarchical"], {"within": "lifo"})


def test_shared_constants_and_helpers():
    from alloc.solvers.fgd import engine
    assert engine.MILLI is MILLI
    assert short_repr("ab") == "'ab'" and len(short_repr(list(range(100)))) == 60


def test_sweep_config_read_by_read_json(tmp_path):
    from alloc.sweep.config import read_config
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  nope\n}")
    with pytest.raises(InputError, match="bad.json: line 2 column 3: malformed JSON"):
        read_config(bad)
    with pytest.raises(InputError, match="no such sweep config"):
        read_config(tmp_path / "missing.json")


def test_one_share_lp_result_type():
    from alloc.shares import core, lp, policies
    assert lp.FullSolution is core.LPResult and core.CoreResult is core.LPResult
    assert not hasattr(policies, "_Req")
    fields = [f for f in core.LPResult.__dataclass_fields__]
    assert fields[:5] == ["status", "X", "Y", "objective", "bound"]


def test_advance_is_the_one_jobs_after_an_allocation():
    from alloc import Cluster, Job, Server, allocate
    from alloc.tenancy import with_current
    c = Cluster([Server("s0", cpu=8000, mem=16000, gpus=2)])
    jobs = [Job(f"j{i}", 1, cpu=1000, mem=1000) for i in range(3)]
    a = allocate(c, jobs, solver="best-fit")
    after = a.advance(jobs)
    assert [j.current is not None for j in after] == [True, True, False]
    assert all(j.current.throughput == 0.0 and j.current.same_as(a.placement(j.id))
               for j in after if j.current is not None)
    # running jobs stay where they run; a job the allocation does not name is unchanged
    extra = Job("x", 1, cpu=1000, mem=1000, current=after[0].current)
    again = allocate(c, after, solver="best-fit")
    assert again.advance([*after, extra])[-1] is extra
    assert again.advance(after) == after
    assert with_current(jobs, a) == after and with_current([*jobs, extra], a, drop=["j0"]) \
        == (*after[1:], replace_current(extra, None))


def replace_current(job, current):
    from dataclasses import replace
    return replace(job, current=current)
