"""The FGD family's node-scoring policies by the experiment's names, and
every pod placed in order with one (`place`, a pod that fits nowhere
dropped): what the algorithm tests drive directly, without a session."""
import numpy as np

from alloc.experiments.openb import solver_of
from alloc.solvers.fgd.engine import place
from alloc.solvers.fgd.solvers import new_policy


def make_policy(name, seed=0, **options):
    """The policy of the experiment's ``name`` (``best-fit`` is ``openb-best-fit``)."""
    return new_policy(solver_of(name), seed, **options)


def place_all(state, policy, pods):
    """Each pod placed in order: (placements, used, frag) after every attempt."""
    out, used, frag = [], np.zeros(len(pods), dtype=np.int64), np.zeros(len(pods))
    for i, pod in enumerate(pods):
        out.append(place(state, policy, pod))
        used[i] = state.used
        frag[i] = state.frag.sum() if state.fm is not None else 0.0
    return out, used, frag
