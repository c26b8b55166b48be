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

from ...deadline import Deadline
from ...errors import InputError
from ..kinds import Context, JobView
from .classes import PairedShares
from .gandiva import gandiva_pairing
from .partition import PopShares, pop_solve
from .problem import PairedProblem


def problem_of(jobs: Sequence[JobView], ctx: Context) -> PairedProblem:
    """The `PairedProblem` of the active jobs: their models in the run's
    throughput table, weight 1, the cluster's GPUs of each of its types.

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
    counts = Counter(s.gpu_type for s in ctx.cluster.servers for _ in range(s.gpus))
    by_lower = {str(t).lower(): n for t, n in counts.items()}
    cap = [by_lower.get(str(t).lower(), 0) for t in table.types]
    return PairedProblem.from_table(table, [row(j) for j in jobs], cap,
                                    job_ids=[j.id for j in jobs])


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
        return as_fractions(self.solve(problem_of(jobs, ctx)).shares)


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

    def solve(self, problem: PairedProblem, seed: int = 0) -> PairedShares:
        """Gandiva's shares of ``problem``."""
        self.last = gandiva_pairing(problem, self.seed if self.seed is not None else seed)
        return self.last

    def shares(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Mapping[str, float]]:
        """Fractions of time per job and type, pairs under ``"a+b"``."""
        if not jobs:
            return {}
        seed = self.seed if self.seed is not None else ctx.rng.randrange(2 ** 31)
        return as_fractions(self.solve(problem_of(jobs, ctx), seed))


__all__ = ["GandivaPairing", "Pop", "as_fractions", "problem_of"]
