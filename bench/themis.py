"""Themis (Mahajan et al., NSDI'20) on the one simulator: finish-time
fairness rho of Themis's auction against the schedulers of the Tiresias
experiment, on traces in the Tiresias artifact's CSV format.

    python bench/themis.py --trace ../shared/data/tiresias/t480_yarn_s0.csv --out themis.json
    python bench/themis.py --trace T.csv --plot rho.png       # rho over time (matplotlib)

The NSDI'20 paper could not be read here, and its trace, cluster and figures
are not public: no figure of the paper is reproduced.  The bench reports,
for each policy, ``rho_max`` and ``rho_avg`` (finish-time fairness of the
finished jobs, as `alloc.sim` reports it), ``unfairness`` (the fraction of
jobs with rho > 1), ``avg_jct_s``, ``preemptions`` and ``wall_s``; for
Themis also the auctions held and their mean bidders; and, per decision, the
largest and mean projected rho of the active jobs (every policy observed the
same way, `alloc.sched.themis.fairness`) for the plot.

Stacks: ``themis`` (order ``themis``, f = 0.8, 600 s leases) and the
preemptive baselines on Tiresias' GPU-counting placement (``tiresias`` with
packlimit 1), ``yarn-cs`` on its consolidated placement; event-driven
decisions; each job runs at its duration alone (the trace's).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from alloc.errors import InputError  # noqa: E402
from alloc.sched import get_policy  # noqa: E402
from alloc.sched.themis.fairness import Contention, rho  # noqa: E402
from alloc.sched.tiresias.progress import TiresiasProgress  # noqa: E402
from alloc.sim import simulate  # noqa: E402
from tiresias import cluster, stack, workload  # noqa: E402

POLICIES = ("themis", "tiresias-l", "las", "srtf", "yarn-cs")


class Observed:
    """An order that ranks as ``inner`` does and records, at each decision,
    the largest and mean projected rho of the active jobs."""

    def __init__(self, inner):
        self.inner = inner
        self.preemptive = getattr(inner, "preemptive", False)
        self.static = False
        self.contention = Contention()
        self.history: list[tuple[float, float, float]] = []

    def rank(self, jobs, ctx):
        now = ctx.now_s
        self.contention.observe(now, [j.id for j in jobs])
        G = float(sum(s.gpus for s in ctx.cluster.servers))
        r = [rho(now, j.arrival_s, j.remaining_s, j.duration_s, j.gpus, G,
                 self.contention.average(j.id, now), j.running) for j in jobs]
        r = [x for x in r if math.isfinite(x)]
        if r:
            self.history.append((now, max(r), float(np.mean(r))))
        return self.inner.rank(jobs, ctx)


def run(policy: str, trace: str, f: float = 0.8, lease_s: float = 600.0) -> tuple[dict, list]:
    """One policy on the trace: its figures and its rho history."""
    t0 = time.perf_counter()
    jobs = workload(trace)
    if policy == "themis":
        inner = get_policy("order", "themis").build(f=f, lease_s=lease_s)
        kw = {"placement": ("tiresias", {"packlimit": 1.0}), "candidates": "fit"}
    elif policy == "las":
        inner = get_policy("order", "las").build()
        kw = {"placement": ("tiresias", {"packlimit": 1.0}), "candidates": "fit"}
    else:
        kw = stack(policy, jobs)
        name, params = (kw["order"], {}) if isinstance(kw["order"], str) else kw["order"]
        inner = get_policy("order", name).build(**params)
    order = Observed(inner)
    kw = {k: v for k, v in kw.items() if k != "order"}
    res = simulate(cluster(15, 4), jobs, order=order, progress=TiresiasProgress(), **kw)
    s = res.summary()
    out = {"rho_max": s["rho_max"], "rho_avg": s["rho_avg"], "unfairness": s["unfairness"],
           "avg_jct_s": s["avg_jct_s"], "makespan_s": s["makespan_s"],
           "preemptions": s["preemptions"], "wall_s": round(time.perf_counter() - t0, 3)}
    if policy == "themis":
        out["auctions"] = inner.auctions
        bids = [len(h["bidders"]) for h in inner.history]
        out["mean_bidders"] = float(np.mean(bids)) if bids else 0.0
    return out, order.history


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="a trace in the Tiresias artifact's format")
    ap.add_argument("--policy", default="all", choices=POLICIES + ("all",),
                    help="one policy or all (default all)")
    ap.add_argument("--f", type=float, default=0.8, help="Themis' fairness knob (default 0.8)")
    ap.add_argument("--lease-s", type=float, default=600.0, help="lease, s (default 600)")
    ap.add_argument("--out", default="", help="write the figures (JSON) here")
    ap.add_argument("--plot", default="", help="plot rho over time here (PNG; matplotlib)")
    args = ap.parse_args(argv)
    if not 0.0 <= args.f < 1.0 or not args.lease_s > 0:
        print("themis: --f: expected a number in [0, 1); --lease-s: expected seconds > 0",
              file=sys.stderr)
        return 2
    names = POLICIES if args.policy == "all" else (args.policy,)
    figs, hist = {}, {}
    try:
        for p in names:
            figs[p], hist[p] = run(p, args.trace, args.f, args.lease_s)
            f = figs[p]
            print(f"{p:11s} rho_max {f['rho_max']:6.2f}  rho_avg {f['rho_avg']:5.2f}  unfair "
                  f"{f['unfairness']:.2f}  avg JCT {f['avg_jct_s']:7.0f}  preemptions "
                  f"{f['preemptions']:5d}  wall {f['wall_s']:.1f} s", file=sys.stderr)
    except InputError as exc:
        print(f"themis: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(figs, indent=1) + "\n")
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("themis: --plot needs matplotlib (the plot extra)", file=sys.stderr)
            return 2
        fig, ax = plt.subplots(1, 2, figsize=(11, 4))
        for p, h in hist.items():
            if not h:
                continue
            t = np.array([x[0] for x in h]) / 3600
            ax[0].plot(t, [x[1] for x in h], label=p, lw=1)
            ax[1].plot(t, [x[2] for x in h], label=p, lw=1)
        ax[0].set_title("largest projected rho of the active jobs")
        ax[1].set_title("mean projected rho of the active jobs")
        for a in ax:
            a.set_xlabel("time (h)")
            a.set_yscale("log")
            a.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
