"""FGD's target workload read off pod counts equals the one built pod by pod."""
from __future__ import annotations

import random

import pytest

from alloc.solvers.fgd.engine import FragModel, Pod
from alloc.solvers.fgd.solvers import counted_target


@pytest.mark.parametrize("seed", range(5))
def test_target_from_counts_equals_from_pods(seed):
    rng = random.Random(seed)
    shapes = [Pod(rng.choice((0, 2000, 4000)), rng.choice((1000, 8000)), k,
                  rng.choice((250, 500, 1000)) if k == 1 else (1000 if k else 0),
                  rng.choice(((), ("V100",), ("V100", "T4"))) if k else ())
              for k in (rng.choice((0, 1, 1, 2, 4, 8)) for _ in range(12))]
    pending = [rng.choice(shapes) for _ in range(rng.randint(0, 40))]
    held = [(p, rng.randint(0, 300)) for p in rng.sample(shapes, 6)]
    fm = counted_target(pending, held)
    pods = pending + [p for p, n in held for _ in range(n)]
    if not pods:
        assert fm is None
        return
    want = FragModel.from_pods(pods)
    assert fm is not None
    for a in ("c", "m", "k", "p"):
        assert getattr(fm, a).tolist() == getattr(want, a).tolist(), a
    assert fm.types == want.types and fm.typed_demand == pytest.approx(want.typed_demand)


def test_a_target_without_its_keys_is_refused_naming_the_key():
    import pytest
    from alloc import Cluster, Job, Server, allocate
    from alloc.errors import InputError
    cl = Cluster((Server("s0", 8000, 64000, 2),))
    with pytest.raises(InputError, match=r"option 'target': expected the key 'c'"):
        allocate(cl, [Job("a", 1, cpu=1000, mem=1000)], solver="fgd", target={"x": 1})
