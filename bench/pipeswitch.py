"""Reproduce PipeSwitch's Fig. 6a (Bai et al., OSDI'20): inference throughput
and GPU utilisation against the scheduling cycle T for PipeSwitch,
stop-and-start and NVIDIA MPS, and the inference latency (Fig. 6b); then run
PipeSwitch's allocation decision on a shared cluster.

    python bench/pipeswitch.py                      # Fig. 6a/6b and the shared-cluster runs
    python bench/pipeswitch.py --out fig6a.json     # {"T": [...], "pipeswitch": [...], ...}

Setup (the paper's section 6.1): ResNet152 for training and inference on
eight p3.2xlarge instances (one V100 each); the GPU switches between the two
tasks every T seconds; a closed-loop client sends batches of 8 during the
inference half.  Parameters, fixed before any run: switch costs from Table 3
(V100: stop-and-start 6,475 ms, MPS 307 ms, PipeSwitch 6.01 ms), the ready
model's batch time from Table 1 (32 ms), MPS's contended latency from the
text of section 6.1 (about 80 ms).  Fig. 6 is alloc.sim.pipeswitch.cycle_run
(the protocol of one cycle's inference half, in closed form).

The shared-cluster part places inference services beside training jobs with
alloc.pipeswitch.share_gpus at each ``--shared-cycles`` cycle and mechanism (a
cycle no longer than PipeSwitch's own switch is bad input: exit 2; the other
mechanisms skip the cycles their switches outlast) and runs the result
(Poisson requests over ``--horizon`` seconds) on the one simulator with the
mechanism ``switching`` (alloc.sched.pipeswitch), reporting the GPU time left to training, lost to
switching, and the latency each service sees.  Writes
bench/results/pipeswitch.md and bench/results/pipeswitch_fig6.png
(matplotlib, the optional extra ``plot``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alloc.errors import InputError  # noqa: E402
from alloc.model import Cluster, Server  # noqa: E402
from alloc.pipeswitch import MECHANISMS, Service, Training, load_costs, share_gpus  # noqa: E402
from alloc.sim.pipeswitch import cycle_run, shared_run  # noqa: E402

#: Fig. 6a read from the bars (batches/s, eight instances; +-5).
PAPER = {"upper_bound": 255, "pipeswitch": [245, 245, 245, 245, 244],
         "mps": [98, 100, 102, 102, 104], "stop_and_start": [2, 1, 0, 88, 192]}
PAPER_T = [1, 2, 5, 10, 30]
#: The shared-cluster scenario: 8 V100s, 8 ResNet152 training jobs, services.
SERVICES = [("web-a", 6.0, 150.0), ("web-b", 4.0, 300.0), ("batch-c", 2.0, 2000.0),
            ("batch-d", 1.0, 5000.0), ("api-e", 8.0, 100.0), ("api-f", 3.0, 1200.0)]


def _cycles(text: str, flag: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag}: expected numbers separated by commas, got {text!r}") from None
    if not out or any(not x > 0 for x in out):
        raise InputError(f"{flag}: expected numbers > 0 (seconds), got {text!r}")
    return [int(x) if x == int(x) else x for x in out]


def fig6(cycles, costs, model: str, gpu: str) -> dict:
    """Fig. 6a/6b points for every mechanism."""
    pts = {m: [cycle_run(m, T, model=model, gpu_type=gpu, costs=costs) for T in cycles]
           for m in MECHANISMS}
    return pts


def shared(cycles, costs, mechanisms, horizon_s: float = 600.0) -> list[dict]:
    """The allocation decision and its run at each cycle the mechanisms allow."""
    cl = Cluster(tuple(Server(f"p3-{i}", 8000, 62464, 1, "V100") for i in range(8)))
    trainings = [Training(f"train-{i}", "ResNet152") for i in range(8)]
    services = [Service(s, "ResNet152", r, slo) for s, r, slo in SERVICES]
    rows = []
    for mech in mechanisms:
        for T in cycles:
            try:
                d = share_gpus(cl, trainings, services, cycle_s=T, mechanism=mech, costs=costs)
            except InputError as exc:
                if mech == "pipeswitch":        # the cycles asked for must suit PipeSwitch
                    raise
                rows.append({"mechanism": mech, "T": T, "refused": str(exc)})
                continue
            r = shared_run(d, {s.id: s.rate for s in services}, horizon_s=horizon_s)
            rows.append({"mechanism": mech, "T": T, "training_share": r.training_share,
                         "switch_share": r.switch_share, "waiting": len(d.waiting),
                         "shared": sum(1 for p in d.services.values() if p.shared),
                         "services": {s: (v.mean_ms, v.p99_ms, v.max_ms)
                                      for s, v in r.services.items()},
                         "slo_met": sum(1 for s in services
                                        if r.services[s.id].p99_ms <= s.slo_ms)})
    return rows


def _md(pts, cycles, rows, wall: float) -> str:
    out = ["# PipeSwitch (Bai et al., OSDI'20): scheduling cycles and shared GPUs", "",
           "Command: `python bench/pipeswitch.py` (" + f"{wall:.2f} s)." , "",
           "## Fig. 6a: inference throughput (batches/s, eight V100s) and GPU utilisation", "",
           "GPU utilisation is the paper's: throughput over the ready model's (the upper "
           "bound). Paper figures are read from the bars of Fig. 6a (+-5 batches/s).", "",
           "| T (s) | upper bound (paper) | PipeSwitch (paper) | util | stop-and-start (paper) "
           "| util | MPS (paper) | util |", "|---|---|---|---|---|---|---|---|"]
    for k, T in enumerate(cycles):
        pk = PAPER_T.index(T) if T in PAPER_T else None
        cell = []
        for m in ("pipeswitch", "stop_and_start", "mps"):
            p = pts[m][k]
            paper = f" ({PAPER[m][pk]})" if pk is not None else ""
            cell.append(f"{p.throughput:.1f}{paper} | {p.utilisation:.3f}")
        ub = f" ({PAPER['upper_bound']})" if pk is not None else ""
        out.append(f"| {T:g} | {pts['pipeswitch'][k].upper_bound:.1f}{ub} | " + " | ".join(cell)
                   + " |")
    out += ["", "## Fig. 6b: mean inference latency (ms; first batch of a half in brackets)", "",
            "| T (s) | PipeSwitch | stop-and-start | MPS |", "|---|---|---|---|"]
    for k, T in enumerate(cycles):
        out.append(f"| {T:g} | " + " | ".join(
            f"{pts[m][k].mean_latency_ms:.1f} ({pts[m][k].first_latency_ms:.0f})"
            for m in ("pipeswitch", "stop_and_start", "mps")) + " |")
    out += ["", "## Shared cluster: 8 V100s, 8 ResNet152 training jobs, 6 services", "",
            "Services (rate in batches/s, SLO in ms): " + ", ".join(
                f"{s} ({r:g}/s, {slo:g})" for s, r, slo in SERVICES) + ".", "",
            "| mechanism | T (s) | training share | switching share | services sharing "
            "| training jobs waiting | services within SLO (p99) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "refused" in r:
            why = r["refused"].split(" (")[-1].rstrip(")")
            out.append(f"| {r['mechanism']} | {r['T']:g} | cannot run: a switch takes {why} | | | | |")
            continue
        out.append(f"| {r['mechanism']} | {r['T']:g} | {r['training_share']:.3f} | "
                   f"{r['switch_share']:.4f} | {r['shared']} | {r['waiting']} | "
                   f"{r['slo_met']} of {len(SERVICES)} |")
    return "\n".join(out) + "\n"


def _plot(pts, cycles, path: str) -> bool:
    from alloc.sim.plots import plot_lines
    series = {m: [p.utilisation for p in pts[m]] for m in MECHANISMS}
    if list(cycles) == PAPER_T:          # the paper's bars over its upper bound
        series.update({f"{m} (paper)": [x / PAPER["upper_bound"] for x in PAPER[m]]
                       for m in MECHANISMS})
    return plot_lines(cycles, series, path, "scheduling cycle T (s)", "GPU utilisation",
                      "PipeSwitch Fig. 6a: utilisation against the cycle")


def main(argv=None) -> int:
    """Run the reproduction; exit 2 with one line on bad input."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", default="1,2,5,10,30", help="cycles T, seconds (default: 1,2,5,10,30)")
    ap.add_argument("--shared-cycles", default="0.1,0.25,0.5,1,2,10,30",
                    help="cycles of the shared-cluster runs, seconds "
                         "(default: 0.1,0.25,0.5,1,2,10,30)")
    ap.add_argument("--horizon", type=float, default=600.0,
                    help="seconds of requests in each shared-cluster run (default: 600)")
    ap.add_argument("--model", default="ResNet152", help="model (default: ResNet152)")
    ap.add_argument("--gpu", default="V100", help="GPU type (default: V100)")
    ap.add_argument("--costs", default=None, help="a costs file (default: the shipped Table 3 data)")
    ap.add_argument("--out", default=None, help="write the Fig. 6a JSON here (default: none)")
    ap.add_argument("--md", default=str(ROOT / "bench" / "results" / "pipeswitch.md"),
                    help="results markdown (default: bench/results/pipeswitch.md)")
    ap.add_argument("--plot", default=str(ROOT / "bench" / "results" / "pipeswitch_fig6.png"),
                    help="utilisation plot (default: bench/results/pipeswitch_fig6.png)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        cycles = _cycles(args.cycles, "--cycles")
        costs = load_costs(args.costs)
        pts = fig6(cycles, costs, args.model, args.gpu)
        if not args.horizon > 0:
            raise InputError(f"--horizon: expected a number > 0 (seconds), got {args.horizon!r}")
        rows = shared(_cycles(args.shared_cycles, "--shared-cycles"), costs, MECHANISMS,
                      args.horizon)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - t0
    for m in MECHANISMS:
        print(f"{m:>15}: " + "  ".join(f"T={p.cycle_s:g}s util {p.utilisation:.3f} "
                                        f"({p.throughput:.0f}/s, {p.mean_latency_ms:.0f} ms)"
                                        for p in pts[m]))
    if args.out:
        doc = {"T": cycles, **{m: [p.utilisation for p in pts[m]] for m in MECHANISMS}}
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    if args.md:
        page = Path(args.md)
        old = page.read_text() if page.exists() else ""
        keep = old[old.index("## Reading"):] if "## Reading" in old else ""
        page.write_text(_md(pts, cycles, rows, wall) + ("\n" + keep if keep else ""))
    if args.plot and not _plot(pts, cycles, args.plot):
        print("note: matplotlib is not installed; no plot", file=sys.stderr)
    print(f"wall {wall:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
