"""Synthetic workloads in the style of Gavel and Synergy.

* Arrivals: Poisson at ``jobs_per_hour`` (exponential inter-arrival times).
* Work (the job's duration at its GPU-proportional share): with probability
  0.8, ``10^U(1.5, 3)`` minutes, else ``10^U(3, 4)`` minutes (Gavel, OSDI'20;
  Synergy's simulator uses the same law).
* GPU demand: all 1 (``"single"``) or 1/2/4/8 GPUs with probability
  0.70/0.10/0.15/0.05 (``"multi"``).
* Model: the class (image / language / speech) whose share of the jobs
  assigned so far is furthest below the requested split, then the class's
  models round-robin.

Model classes follow the Synergy artifact's model zoo (msr-fiddle/synergy,
``simulator/jobs/model_zoo.py``): image = alexnet, res18, res50, mobilenet,
shufflenet; language = gnmt, transformer, lstm; speech = m5, deepspeech.
``bert`` and ``vae`` appear there only in a commented-out language list, so
they are not in the default mix (both have CPU/memory-insensitive profiles,
like the language models); pass ``classes`` to use another mix.
"""
from __future__ import annotations

import math
import random
from typing import Iterator, Mapping, Sequence

from .jobs import WorkloadJob

MODEL_CLASSES: dict[str, tuple[str, ...]] = {
    "image": ("alexnet", "res18", "res50", "mobilenet", "shufflenet"),
    "language": ("gnmt", "transformer", "lstm"),
    "speech": ("m5", "deepspeech"),
}
CLASS_ORDER = ("image", "language", "speech")
GPU_MIX = {"single": ((1, 1.0),), "multi": ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))}


class ModelAssigner:
    """Class by largest deficit against the split, then round-robin models."""

    def __init__(self, split: Sequence[float] = (20, 70, 10),
                 classes: Mapping[str, Sequence[str]] | None = None):
        classes = dict(classes or MODEL_CLASSES)
        names = list(classes)
        if len(split) != len(names):
            raise ValueError(f"split has {len(split)} entries for {len(names)} classes")
        tot = float(sum(split))
        self.share = {c: s / tot for c, s in zip(names, split)}
        self.classes = {c: tuple(classes[c]) for c in names}
        self.count = {c: 0 for c in names}
        self.next = {c: 0 for c in names}
        self.total = 0

    def __call__(self) -> str:
        best: str | None = None
        gap: float | None = None
        for c, want in self.share.items():
            if want <= 0 or not self.classes[c]:
                continue
            have = self.count[c] / self.total if self.total else 0.0
            g = want - have
            if gap is None or g > gap + 1e-12:
                best, gap = c, g
        if best is None:
            raise ValueError("no model class has a positive share and models")
        models = self.classes[best]
        m = models[self.next[best] % len(models)]
        self.next[best] += 1
        self.count[best] += 1
        self.total += 1
        return m


def gavel_work_s(rng: random.Random) -> float:
    """Duration at proportional share (seconds): 80 % 10^U(1.5,3) minutes,
    20 % 10^U(3,4) minutes."""
    if rng.random() < 0.8:
        return 60.0 * 10 ** rng.uniform(1.5, 3.0)
    return 60.0 * 10 ** rng.uniform(3.0, 4.0)


def gavel_mean_work_s() -> float:
    r"""The mean of `gavel_work_s`, exactly (seconds):
    $60\,(0.8\,\frac{10^3 - 10^{1.5}}{1.5 \ln 10} + 0.2\,\frac{10^4 - 10^3}{\ln 10})$
    (about 16.8 hours)."""
    ln10 = math.log(10.0)
    return 60.0 * (0.8 * (10 ** 3 - 10 ** 1.5) / (1.5 * ln10) + 0.2 * (10 ** 4 - 10 ** 3) / ln10)


def gpu_demand(rng: random.Random, mix: str) -> int:
    """A job's GPU count: 1 (single) or 1/2/4/8 at 0.70/0.10/0.15/0.05 (multi)."""
    table = GPU_MIX[mix]
    u = rng.random()
    acc = 0.0
    for n, p in table:
        acc += p
        if u < acc:
            return n
    return table[-1][0]


class SyntheticWorkload:
    """An endless, seeded stream of `alloc.sim.WorkloadJob` (ids ``"0"``,
    ``"1"``, ...; ``duration_s`` is the job's run time at its
    GPU-proportional share).

    Examples
    --------
    >>> from alloc.sim.workload import SyntheticWorkload
    >>> jobs = SyntheticWorkload(9.0, seed=0).take(3)
    >>> [j.id for j in jobs], jobs[0].gpus, jobs[0].arrival_s < jobs[1].arrival_s
    (['0', '1', '2'], 1, True)
    """

    def __init__(self, jobs_per_hour: float, split: Sequence[float] = (20, 70, 10),
                 gpu_mix: str = "single", seed: int = 0,
                 classes: Mapping[str, Sequence[str]] | None = None, max_gpus: int | None = None):
        if not jobs_per_hour > 0:
            raise ValueError("jobs_per_hour must be > 0")
        if gpu_mix not in GPU_MIX:
            raise ValueError(f"gpu_mix must be one of {sorted(GPU_MIX)}")
        self.rate = jobs_per_hour / 3600.0
        self.split, self.gpu_mix, self.seed = tuple(split), gpu_mix, seed
        self.classes = classes
        self.max_gpus = max_gpus

    def __iter__(self) -> Iterator[WorkloadJob]:
        rng = random.Random(self.seed)
        assign = ModelAssigner(self.split, self.classes)
        t, i = 0.0, 0
        while True:
            t += -math.log(1.0 - rng.random()) / self.rate
            n = gpu_demand(rng, self.gpu_mix)
            if self.max_gpus:
                n = min(n, self.max_gpus)
            model = assign()
            yield WorkloadJob(str(i), t, n, duration_s=gavel_work_s(rng), model=model)
            i += 1

    def take(self, k: int) -> list[WorkloadJob]:
        """The first ``k`` jobs of the stream."""
        out: list[WorkloadJob] = []
        for job in self:
            if len(out) >= k:
                break
            out.append(job)
        return out


def all_models(classes: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Every model of the classes, in class order."""
    classes = classes or MODEL_CLASSES
    return sorted({m for ms in classes.values() for m in ms})
