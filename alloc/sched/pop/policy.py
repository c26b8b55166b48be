r"""POP and Gandiva's pairing as share policies of the scheduling layer.

``pop``
    Gavel's max-min fairness with space sharing, split into ``k`` parts
    (`alloc.sched.pop.partition`) and solved exactly per part at class
    size (`alloc.sched.pop.classes`); ``k = 1`` is the unpartitioned
    optimum.
``gandiva-pairing``
    Gandiva's random pairing with equal time for every unit
    (`alloc.sched.pop.gandiva`), POP's baseline.

Both answer ``shares(jobs, ctx)`` (`alloc.sched.kinds.Shares`): each job's
fraction of wall-clock time on each GPU type, alone; pairs under the key
``"a+b"`` (the ``alloc.shares-result/1`` convention), with the fraction of
time the two share GPUs of each type.  They read each job's model through
the run's progress model (``ctx.progress``: a table of measured throughputs,
`alloc.sim.progress.GavelTable`) and the GPUs of each type from the cluster.
``solve(problem)`` takes a `PairedProblem` directly.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np

from ...deadline import Deadline
from ...errors import InputError
from ..kinds import Context, JobView
from .classes import PairedShares
from .gandiva import gandiva_pairing
from .partition import PopShares, pop_solve
from .problem import PairedProblem


def problem_of(jobs: Sequence[JobView], ctx: Context) -> PairedProblem:
    """The `PairedProblem` of the active jobs: their models in the run's
    throughput table, weight 1, the cluster's GPUs of each of its types (a
    type is the table's column of the same name, case aside; a type the
    table lacks has no throughput).

    Raises
    ------
    InputError
        The run has no throughput table (``ctx.progress.table``), or a job's
        model is not in it.
    """
    progress = getattr(ctx, "progress", None)
    table = getattr(progress, "table", None)
    row = getattr(progress, "model_row", None)
    if table is None or row is None:
        raise InputError("shares: this policy needs a progress model with a throughput table "
                         "(gavel)")
    counts = Counter(s.gpu_type or "" for s in ctx.cluster.servers for _ in range(s.gpus))
    types = sorted(counts)
    col = {str(t).lower(): c for c, t in enumerate(table.types)}
    idx = [col.get(str(t).lower(), -1) for t in types]
    M, k = len(table.models), len(types)
    alone = np.zeros((M, k))
    pair = np.zeros((M, M, k, 2))
    for c, j in enumerate(idx):
        if j >= 0:
            alone[:, c] = table.alone[:, j]
            pair[:, :, c] = table.pair[:, :, j]
    scale = table.scale if getattr(table, "scale", None) is not None else np.ones(M, dtype=int)
    m = len(jobs)
    return PairedProblem(tuple(types), np.array([float(counts[t]) for t in types]),
                         tuple(str(x) for x in table.models), np.asarray(scale, dtype=int), alone,
                         pair, np.array([row(j) for j in jobs], dtype=int), np.ones(m),
                         tuple(j.id for j in jobs))


def as_fractions(r: PairedShares) -> dict[str, dict[str, float]]:
    """Job id -> GPU type -> fraction alone; ``"a+b"`` -> type -> fraction together."""
    p = r.problem
    out: dict[str, dict[str, float]] = {
        jid: {t: float(x) for t, x in zip(p.gpu_types, row) if x > 0}
        for jid, row in zip(p.job_ids, r.X)}
    for a, b, row in zip(r.pa, r.pb, r.Y):
        key = f"{p.job_ids[a]}+{p.job_ids[b]}"
        out[key] = {t: float(x) for t, x in zip(p.gpu_types, row) if x > 0}
    return out


class Pop:
    """POP-``k`` of Gavel's max-min fairness with space sharing (see the module notes).

    Parameters
    ----------
    k : int
        Parts (1: the exact problem).
    partition : {"round-robin", "random"}
    inner : {"water-filling", "max-min"}
    parallel : {"process", "ray", "serial"}
    workers : int or None
    seed : int
        Seed of the random partition.
    time_limit : float
        Seconds per call.

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> pol = get_policy("shares", "pop").build(k=2, parallel="serial")
    >>> p = PairedProblem.build(("v100",), [4], ("a", "b"), [1, 1], [[4.0], [2.0]],
    ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 1, 0, 1])
    >>> pol.solve(p).shares.status.value
    'feasible'
    """

    def __init__(self, k: int = 1, partition: str = "round-robin", inner: str = "water-filling",
                 parallel: str = "process", workers: int | None = None, seed: int = 0,
                 time_limit: float = 60.0) -> None:
        self.k, self.partition, self.inner = k, partition, inner
        self.parallel, self.workers, self.seed = parallel, workers, seed
        self.time_limit = time_limit
        self.last: PopShares | None = None
        #: The ``alloc.shares/1`` problem of the last call (the pairs that
        #: carry time): what a round mechanism turns the fractions into runs with.
        self.last_problem = None

    def solve(self, problem: PairedProblem) -> PopShares:
        """POP's shares of ``problem``."""
        self.last = pop_solve(problem, self.k, how=self.partition, inner=self.inner,
                              seed=self.seed, parallel=self.parallel, workers=self.workers,
                              deadline=Deadline.after(self.time_limit))
        return self.last

    def shares(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Mapping[str, float]]:
        """Fractions of time per job and type, pairs under ``"a+b"``."""
        if not jobs:
            return {}
        r = self.solve(problem_of(jobs, ctx)).shares
        self.last_problem = r.shares_problem
        return as_fractions(r)


class GandivaPairing:
    """Gandiva's random pairing, equal time per unit (see the module notes).

    Parameters
    ----------
    seed : int, optional
        Seed of the pairing (None: the run's random source draws one per call).
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.last: PairedShares | None = None
        self.last_problem = None

    def solve(self, problem: PairedProblem, seed: int = 0) -> PairedShares:
        """Gandiva's shares of ``problem``."""
        self.last = gandiva_pairing(problem, self.seed if self.seed is not None else seed)
        return self.last

    def shares(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Mapping[str, float]]:
        """Fractions of time per job and type, pairs under ``"a+b"``."""
        if not jobs:
            return {}
        seed = self.seed if self.seed is not None else ctx.rng.randrange(2 ** 31)
        r = self.solve(problem_of(jobs, ctx), seed)
        self.last_problem = r.shares_problem
        return as_fractions(r)


__all__ = ["GandivaPairing", "Pop", "as_fractions", "problem_of"]
