r"""What a run produced: summary metrics and the per-job timeline.

Metrics, over the *measured* jobs (the run's window; every job by default):

* JCT $= f_j - a_j$ (finish less arrival): ``avg_jct_s``, ``p50_jct_s``,
  ``p99_jct_s`` (linear interpolation), over the finished measured jobs;
  ``censored_avg_jct_s`` also counts the unfinished ones until the end of
  the run (a lower bound of their JCT);
* ``makespan_s``: the last finish less the first arrival;
* ``utilisation``: GPU-seconds held (milli-GPU shares counted) over the
  cluster's GPUs times the run's span, from the first arrival to the end;
* ``queue_s``: the average time from arrival to first start (queueing
  delay), ``wait_s`` the average time not holding GPUs before finishing;
* counts: ``preemptions`` (stops by a round or a mechanism, suspensions
  included), ``restarts`` (starts after a stop), ``moves``, ``suspensions``,
  ``failures`` (jobs that lost their server), ``resizes``; ``dropped``
  (measured jobs that left the run unfinished: `alloc.sched.kinds.Control.drop`;
  neither finished nor ``unfinished``);
* finish-time fairness (Themis, Mahajan et al., NSDI'20):
  $\rho_j = T^{sh}_j / T^{id}_j$, the JCT over the finish time on a fair
  share of the cluster, $T^{id}_j = T^{alone}_j \max(1, g_j \bar N_j / G)$,
  where $T^{alone}_j$ is the job's run time alone on its GPUs (the
  progress model's), $g_j$ its GPUs, $G$ the cluster's and $\bar N_j$ the
  time-average number of active jobs while it was active (a job whose
  request fits its $1/\bar N_j$ share of the cluster runs as fast as
  alone).  ``rho_avg``, ``rho_max`` and ``unfairness``, the fraction of
  jobs with $\rho_j > 1$ (finished later than on their fair share), over
  jobs with a known run time alone;
* ``rounds`` (decisions), ``steps`` (``Session.step`` calls), ``skipped``
  (rounds that changed nothing), ``wall_time_s`` and where the time went
  (``time``: policies, session events and rounds, progress model, the
  simulator's own loop).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError


def percentile(values, q: float) -> float:
    """The q-th percentile (linear interpolation; 0 for no values).

    Examples
    --------
    >>> from alloc.sim.result import percentile
    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    """
    if len(values) == 0:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=float), q))


@dataclass
class SimResult:
    """A run's outcome (see the module notes).

    Attributes
    ----------
    records : list
        Every job that arrived (`alloc.sim.jobs.JobRecord`): the finished
        ones, then the dropped ones, then those still active at the end.
    measured : list of bool
        Whether each record is measured.
    end_time_s : float
        When the run stopped.
    wall_time_s : float
    samples : list of (t, utilisation, queued, running)
        One per round: allocated GPU fraction, jobs waiting, jobs running.
    stats : dict
        Counts, rounds, steps, timings, the run's settings.
    """
    records: list
    measured: list
    end_time_s: float
    wall_time_s: float
    samples: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @classmethod
    def build(cls, sim: Any, end: float, wall: float) -> "SimResult":
        """Collect a finished `alloc.sim.core.Simulator` run."""
        recs = list(sim.finished) + list(sim.dropped) + list(sim.unfinished)
        t = dict(sim.timing)
        t["loop_s"] = max(0.0, wall - t["policies_s"] - t["session_s"] - t["step_s"]
                          - t["progress_s"])
        span = end - (sim._first_arrival if sim._first_arrival is not None else end)
        gpus = sim._max_milli / 1000.0
        stats = {**sim.counts, "rounds": sim.round_no, "steps": sim.steps, "skipped": sim.skipped,
                 "time": t, "utilisation": (sim._util_area / 1000.0 / (gpus * span))
                 if span > 0 and gpus > 0 else 0.0, "gpus": gpus,
                 "stack": {k: [s.name for s in v] for k, v in sim.slots.items() if v},
                 "progress": getattr(sim.progress, "name", type(sim.progress).__name__),
                 "round_s": sim.round_s, "seed": sim.seed, "round_util": sim.round_util}
        return cls(recs, [sim._measured(r.index) for r in recs], end, wall, list(sim.samples),
                   stats)

    # ----------------------------------------------------------- per job
    def rho(self, r: Any) -> float | None:
        """Finish-time fairness of a finished job (None: unknown run time alone)."""
        if r.finish_s is None or not r.duration_s:
            return None
        g = self.stats.get("gpus") or 1.0
        nbar = r.area0 if r.area0 > 0 else 1.0
        ideal = r.duration_s * max(1.0, r.spec.gpus * nbar / g)
        return (r.finish_s - r.arrival_s) / ideal

    def timeline(self, measured_only: bool = False) -> list[dict]:
        """One dict per job: ``id``, ``arrival_s``, ``start_s``, ``end_s``
        (None while unfinished), ``gpus``, ``gpu_milli`` (its share of each
        GPU), ``model``, ``jct_s``, ``queue_s``,
        ``restarts``, ``preemptions``, ``moves``, ``rho``, ``measured``,
        ``dropped`` (why it left the run unfinished, None if it did not),
        ``runs`` (``[start, end, GPUs]`` of each stretch it held GPUs) and
        ``servers`` (``[time, server ids]`` at each start and each move)."""
        out = []
        for r, m in zip(self.records, self.measured):
            if measured_only and not m:
                continue
            out.append({
                "id": r.id, "arrival_s": r.arrival_s, "start_s": r.start_s, "end_s": r.finish_s,
                "gpus": r.spec.gpus, "gpu_milli": r.spec.gpu_milli, "model": r.model,
                "jct_s": None if r.finish_s is None else r.finish_s - r.arrival_s,
                "queue_s": None if r.start_s is None else r.start_s - r.arrival_s,
                "restarts": r.restarts, "preemptions": r.preemptions, "moves": r.moves,
                "rho": self.rho(r), "measured": m, "dropped": r.dropped,
                "runs": [[a, b if b is not None else self.end_time_s, g]
                         for a, b, g in r.intervals],
                "servers": [[t, list(s)] for t, s in r.where]})
        return out

    def jct(self) -> dict[str, float]:
        """JCT (s) of every finished measured job, by id."""
        return {r.id: r.finish_s - r.arrival_s for r, m in zip(self.records, self.measured)
                if m and r.finish_s is not None}

    # ----------------------------------------------------------- summary
    def summary(self) -> dict:
        """The run's metrics (module notes) as JSON-ready numbers."""
        fin = [r for r, m in zip(self.records, self.measured) if m and r.finish_s is not None]
        pend = [r for r, m in zip(self.records, self.measured)
                if m and r.finish_s is None and r.dropped is None]
        dropped = sum(1 for r, m in zip(self.records, self.measured) if m and r.dropped)
        jcts = [r.finish_s - r.arrival_s for r in fin]
        cens = jcts + [self.end_time_s - r.arrival_s for r in pend]
        rhos = [x for x in (self.rho(r) for r in fin) if x is not None]
        queue = [r.start_s - r.arrival_s for r in fin if r.start_s is not None]
        wait = [(r.finish_s - r.arrival_s) - sum(b - a for a, b, _ in r.intervals) for r in fin]
        st = self.stats
        makespan = (max(r.finish_s for r in fin) - min(r.arrival_s for r in fin)) if fin else 0.0
        out = {
            "jobs": len(fin), "unfinished": len(pend), "dropped": dropped,
            "avg_jct_s": float(np.mean(jcts)) if jcts else 0.0,
            "p50_jct_s": percentile(jcts, 50), "p99_jct_s": percentile(jcts, 99),
            "censored_avg_jct_s": float(np.mean(cens)) if cens else 0.0,
            "makespan_s": float(makespan), "utilisation": float(st.get("utilisation", 0.0)),
            "queue_s": float(np.mean(queue)) if queue else 0.0,
            "wait_s": float(np.mean(wait)) if wait else 0.0,
            "preemptions": int(st.get("preemptions", 0)), "restarts": int(st.get("restarts", 0)),
            "moves": int(st.get("moves", 0)), "suspensions": int(st.get("suspensions", 0)),
            "failures": int(st.get("failures", 0)), "resizes": int(st.get("resizes", 0)),
            "rho_avg": float(np.mean(rhos)) if rhos else None,
            "rho_max": float(max(rhos)) if rhos else None,
            "unfairness": float(np.mean([x > 1.0 + 1e-9 for x in rhos])) if rhos else None,
            "rounds": int(st.get("rounds", 0)), "steps": int(st.get("steps", 0)),
            "skipped": int(st.get("skipped", 0)), "end_time_s": float(self.end_time_s),
            "wall_time_s": float(self.wall_time_s),
            "time": {k: float(v) for k, v in st.get("time", {}).items()},
            "stack": st.get("stack", {}), "progress": st.get("progress"),
            "round_s": st.get("round_s"), "seed": st.get("seed"),
        }
        return out

    # ------------------------------------------------------------- files
    def write(self, out: str | Path, *, parquet: bool = False, plots: bool = False) -> list[str]:
        """Write ``summary.json`` and ``timeline.jsonl`` (and
        ``timeline.parquet`` with ``parquet``, which needs pyarrow; and the
        plots with ``plots``, which need matplotlib) into the directory
        ``out``; returns the names written.

        Raises
        ------
        InputError
            The directory cannot be written, or an extra is missing.
        """
        d = Path(out)
        try:
            d.mkdir(parents=True, exist_ok=True)
            (d / "summary.json").write_text(json.dumps(_plain(self.summary()), indent=1) + "\n")
            with open(d / "timeline.jsonl", "w") as f:
                for row in self.timeline():
                    f.write(json.dumps(_plain(row)) + "\n")
        except OSError as exc:
            raise InputError(f"{out}: cannot write ({exc.strerror})") from None
        names = ["summary.json", "timeline.jsonl"]
        if parquet:
            names.append(self._parquet(d))
        if plots:
            from .plots import plot_all
            names += plot_all(self, d)
        return names

    def _parquet(self, d: Path) -> str:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError("timeline.parquet needs pyarrow (the extra 'parquet': pip install "
                             "'alloc[parquet]')") from None
        rows = self.timeline()
        cols = {k: [r[k] for r in rows] for k in rows[0]} if rows else {"id": []}
        for k in ("runs", "servers"):
            if k in cols:
                cols[k] = [json.dumps(x) for x in cols[k]]
        pq.write_table(pa.table(cols), d / "timeline.parquet")
        return "timeline.parquet"


def _plain(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return _plain(x.item())
    return x


__all__ = ["SimResult", "percentile"]
