r"""Salus's job profiles and GPU memory model.

Salus (Yu & Chowdhury, MLSys'20) ships ``tests/workloads.csv`` (Apache-2.0):
one row per training configuration ``<model>_<batch>_<length>``, its JCT
alone on the GPU (s), its peak GPU memory (MB) and its iterations, measured
with TensorFlow.  It is read at run time from a copy of the artifact
(`read_workloads`); nothing of it is shipped.

Salus splits a job's GPU memory into *persistent* memory (the model and the
framework's own: resident for the job's whole life) and *ephemeral* memory
(the scratch an iteration allocates and frees).  The profiles give only the
peak; the split is read from them: a model's peak grows linearly with its
batch size, its intercept at batch 0 is what does not depend on the batch --
the persistent part.  For each model, $P_m$ is the intercept of the
least-squares line through its (batch, peak) points, clipped to
$[0, \min \text{peak}]$, and a job's ephemeral memory is $E = \text{peak} -
P_m$ (`memory_split`).  For VGG-16 the intercept is 2.2 GB (its 138 M
parameters take 0.55 GB, three times that with gradients and momentum); for
ResNet-50, 0.21 GB (25.6 M parameters, 0.10 GB).

Units: seconds, MB (MiB as the profiles count them).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ...errors import InputError


@dataclass(frozen=True)
class Profile:
    """One training configuration of the profiles.

    Attributes
    ----------
    name : str
        ``<model>_<batch>_<length>``.
    model : str
    batch : int
    jct_s : float
        Run time alone on the GPU (s).
    peak_mb : float
        Peak GPU memory (MB).
    iterations : int
    persistent_mb, ephemeral_mb : float
        Its memory split (`memory_split`); both 0 until split.

    Examples
    --------
    >>> from alloc.sched.salus.profiles import Profile
    >>> round(Profile("vgg11_25_1min", "vgg11", 25, 67.059, 3709.6, 565).iteration_s, 6)
    0.118688
    """
    name: str
    model: str
    batch: int
    jct_s: float
    peak_mb: float
    iterations: int
    persistent_mb: float = 0.0
    ephemeral_mb: float = 0.0

    @property
    def iteration_s(self) -> float:
        """Seconds per iteration alone."""
        return self.jct_s / self.iterations


def read_workloads(path) -> list[Profile]:
    """The profiles of a Salus ``workloads.csv`` (columns: name, JCT s, peak
    MB, iterations[, command]), memory split (`memory_split`).

    Raises
    ------
    InputError
        One line naming the file, the row and what was expected.
    """
    p = Path(path)
    try:
        rows = list(csv.reader(p.read_text().splitlines()))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the Salus profiles ({type(exc).__name__})") from None
    out = []
    for i, r in enumerate(rows, 1):
        if not r or not r[0].strip():
            continue
        try:
            name = r[0].strip()
            model, batch, _ = name.rsplit("_", 2)
            prof = Profile(name, model, int(batch), float(r[1]), float(r[2]), int(r[3]))
        except (ValueError, IndexError):
            raise InputError(f"{path}: row {i}: expected 'model_batch_length,jct_s,peak_mb,"
                             f"iterations', got {','.join(r[:4])[:60]!r}") from None
        if not (prof.jct_s > 0 and prof.peak_mb > 0 and prof.iterations > 0
                and math.isfinite(prof.jct_s) and math.isfinite(prof.peak_mb)):
            raise InputError(f"{path}: row {i}: expected a JCT, a peak memory and iterations > 0")
        out.append(prof)
    if not out:
        raise InputError(f"{path}: no profiles")
    return memory_split(out)


def memory_split(profiles: Sequence[Profile]) -> list[Profile]:
    """Each profile with its persistent and ephemeral memory (see the module
    notes): per model, the intercept of the peak over the batch size.

    Examples
    --------
    >>> from alloc.sched.salus.profiles import Profile, memory_split
    >>> ps = [Profile(f"m_{b}_1min", "m", b, 60.0, 100.0 + 10 * b, 10) for b in (10, 20)]
    >>> [(round(p.persistent_mb, 6), round(p.ephemeral_mb, 6)) for p in memory_split(ps)]
    [(100.0, 100.0), (100.0, 200.0)]
    """
    by: dict[str, list[Profile]] = {}
    for p in profiles:
        by.setdefault(p.model, []).append(p)
    persist = {}
    for m, ps in by.items():
        b = np.array([p.batch for p in ps], dtype=float)
        pk = np.array([p.peak_mb for p in ps])
        if len(set(b.tolist())) >= 2:
            _, icpt = np.polyfit(b, pk, 1)
        else:
            icpt = 0.0
        persist[m] = float(min(max(icpt, 0.0), pk.min()))
    return [Profile(p.name, p.model, p.batch, p.jct_s, p.peak_mb, p.iterations,
                    persist[p.model], p.peak_mb - persist[p.model]) for p in profiles]


__all__ = ["Profile", "memory_split", "read_workloads"]
