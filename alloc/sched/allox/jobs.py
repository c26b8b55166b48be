r"""Jobs that can run on either kind of resource, and the AlloX trace format.

AlloX (Le et al., EuroSys'20) schedules jobs that can run on a GPU *or* on
CPUs, at different speeds: a job ``j`` takes $p_j^{gpu}$ on one GPU and
$p_j^{cpu}$ on one CPU node (a fixed bundle of cores), and each kind of
resource is a set of interchangeable *slots*.  Schedulers know only
estimates $\hat p_j = p_j (1 + \epsilon_j)$ (AlloX measures them by
profiling each job briefly on both kinds); the job's progress follows its
true times.

The trace format is the AlloX simulator's job file: one block per job,

```text
# 17
1 17 1 4 queue7
stage -1.0 32.0 14.0 97.0 1.0 2.0 49.0 1 -0.0585 0.0894
0
```

the second line ``stages id iterations arrival user``, the third
``name duration cpu mem cpu_time gpu gpu_mem gpu_time tasks [cpu_err
gpu_err]`` (cores, GB, time units), the fourth the number of edges between
stages (0).  Times are in the trace's units (the simulator's steps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ...errors import InputError

#: The two kinds of resource a job may run on.
KINDS = ("gpu", "cpu")


@dataclass(frozen=True)
class FlexJob:
    """A job that runs on one GPU or on one CPU node.

    Attributes
    ----------
    id : str
    user : str
        Its owner (AlloX's fairness is between users).
    arrival : float
        Arrival time (trace units).
    cpu_s, gpu_s : float
        True processing time on a CPU node and on a GPU (> 0).
    cpu_est, gpu_est : float
        Their estimates, what schedulers see (> 0).
    cpu, mem : float
        Cores and memory (GB) it takes on CPUs.
    gpu, gpu_mem : float
        GPUs and memory (GB) it takes on a GPU.

    Examples
    --------
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> j = FlexJob("a", "u0", 0.0, cpu_s=97.0, gpu_s=49.0)
    >>> j.time("gpu"), j.estimate("cpu"), j.faster
    (49.0, 97.0, 'gpu')
    """
    id: str
    user: str
    arrival: float
    cpu_s: float
    gpu_s: float
    cpu_est: float | None = None
    gpu_est: float | None = None
    cpu: float = 32.0
    mem: float = 0.0
    gpu: float = 1.0
    gpu_mem: float = 0.0

    def __post_init__(self) -> None:
        for name in ("cpu_s", "gpu_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"job {self.id!r}: {name}: expected a time > 0, got {v!r}")
        for name, true in (("cpu_est", self.cpu_s), ("gpu_est", self.gpu_s)):
            v = getattr(self, name)
            if v is None:
                object.__setattr__(self, name, float(true))
            elif not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"job {self.id!r}: {name}: expected a time > 0, got {v!r}")

    def time(self, kind: str) -> float:
        """True processing time on ``kind`` ("gpu" or "cpu")."""
        return self.gpu_s if kind == "gpu" else self.cpu_s

    def estimate(self, kind: str) -> float:
        """Estimated processing time on ``kind``."""
        return float(self.gpu_est if kind == "gpu" else self.cpu_est)  # type: ignore[arg-type]

    @property
    def faster(self) -> str:
        """The kind it is estimated to run faster on (CPU on a tie: never)."""
        return "cpu" if self.estimate("cpu") < self.estimate("gpu") else "gpu"

    @property
    def shortest(self) -> float:
        """Its shortest estimated processing time."""
        return min(self.estimate("cpu"), self.estimate("gpu"))

    def usage(self, kind: str) -> tuple[float, float, float]:
        """(cores, GPUs, memory) it holds while running on ``kind``."""
        return (self.cpu, 0.0, self.mem) if kind == "cpu" else (0.0, self.gpu, self.gpu_mem)


def read_trace(path) -> list[FlexJob]:
    """The jobs of an AlloX simulator job file (see the module notes),
    sorted by arrival then id.

    Raises
    ------
    InputError
        One line naming the file, the line and what was expected.
    """
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the AlloX job file ({type(exc).__name__})") from None
    return sorted(_parse(lines, str(path)), key=lambda j: (j.arrival, int(j.id)
                                                             if j.id.isdigit() else 0, j.id))


def _parse(lines: list[str], src: str) -> Iterable[FlexJob]:
    i, n = 0, len(lines)
    while i < n:
        line = lines[i].strip()
        if not line or line.startswith("%"):
            i += 1
            continue
        if not line.startswith("#"):
            raise InputError(f"{src}: line {i + 1}: expected '# <job id>', got {line[:40]!r}")
        if i + 2 >= n:
            raise InputError(f"{src}: line {i + 1}: job block cut short (expected 3 more lines)")
        head, stage = lines[i + 1].split(), lines[i + 2].split()
        try:
            jid, arrival, user = head[1], float(head[3]), head[4]
            cpu, mem, cpu_s = float(stage[2]), float(stage[3]), float(stage[4])
            gpu, gpu_mem, gpu_s = float(stage[5]), float(stage[6]), float(stage[7])
            ce = float(stage[9]) if len(stage) > 10 else 0.0
            ge = float(stage[10]) if len(stage) > 10 else 0.0
        except (IndexError, ValueError):
            raise InputError(f"{src}: line {i + 2}: expected 'stages id iterations arrival user' "
                             f"and 'name duration cpu mem cpu_time gpu gpu_mem gpu_time tasks "
                             f"[cpu_err gpu_err]'") from None
        if not (ce > -1 and ge > -1):
            raise InputError(f"{src}: line {i + 3}: estimate errors must be > -1, got {ce}, {ge}")
        yield FlexJob(jid, user, arrival, cpu_s, gpu_s, cpu_s * (1 + ce), gpu_s * (1 + ge),
                      cpu, mem, gpu, gpu_mem)
        i += 4


__all__ = ["FlexJob", "KINDS", "read_trace"]
