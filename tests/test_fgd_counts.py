"""FGD's per-node counts: the path on Python integers for a few nodes equals
the numpy one."""
import numpy as np
from hypothesis import given, settings, strategies as st

from alloc.solvers.fgd.engine import SMALL, FragModel


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_small_counts_equal_numpy(data):
    T = data.draw(st.integers(1, 6))
    W = data.draw(st.integers(1, 8))
    n = data.draw(st.integers(1, SMALL))
    m = data.draw(st.lists(st.sampled_from([0, 100, 250, 500, 999, 1000]), min_size=T, max_size=T))
    fm = FragModel([1000] * T, m, [1] * T, [()] * T, [1.0 / T] * T)
    gfree = np.array(data.draw(st.lists(st.lists(st.integers(0, 1000), min_size=W, max_size=W),
                                        min_size=n, max_size=n)), dtype=np.int64)
    ngpu = np.array(data.draw(st.lists(st.integers(0, W), min_size=n, max_size=n)))
    valid = np.arange(W)[None, :] < ngpu[:, None]
    gfree = np.where(valid, gfree, 0)
    a, cnt = fm._counts_small(gfree, valid)
    f = gfree[:, :, None]
    lt = f < fm.m[None, None, :]
    assert a.dtype == cnt.dtype == np.int64 and a.shape == cnt.shape == (n, T)
    assert (a == (f * lt).sum(axis=1)).all()
    assert (cnt == (~lt & valid[:, :, None]).sum(axis=1)).all()
