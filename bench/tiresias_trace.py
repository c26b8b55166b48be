"""Make a 480-job trace of the Tiresias testbed's construction (Gu et al.,
NSDI'19, §5.1 and Table 3), in the artifact's CSV format, from the YARN
duration samples of a fetched copy of the artifact (SymbioticLab/Tiresias,
Apache-2.0; ``simulator/yarn-gput10000.csv``, read there, never copied).

    python bench/tiresias_trace.py --artifact DIR --seed 1 --out t480_s1.csv

The construction, as the paper gives it:

* 480 jobs: 240 of 1 GPU and 40, 80, 90, 25, 5 of 2, 4, 8, 16, 32 GPUs, in
  random order;
* 48 jobs of each of the ten models of Table 6, in random order;
* Poisson arrivals with a 30 s mean gap (gaps rounded to whole seconds);
* a job is *small* with at most 4 GPUs and *short* under 800 s; Table 3's
  bins (SS 63.5 %, SL 12.5 %, LS 16.5 %, LL 7.5 %) make a small job short
  with probability 63.5 / 76 and a large one with 16.5 / 24;
* a short job's duration is drawn from the samples in [120, 800) s, a long
  one's from [800, 7200] s (training times "from 2 min to 2 h");
* ``iterations`` = ``duration`` (one iteration per second: no policy here
  reads it).

``../shared/data/tiresias/t480_yarn_s0.csv`` was made by the same recipe
with its own generator, which is not public: these traces share its
construction, not its random draws.
"""
from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path

GPUS = {1: 240, 2: 40, 4: 80, 8: 90, 16: 25, 32: 5}
MODELS = ("vgg19", "vgg16", "vgg11", "alexnet", "resnet152", "resnet101", "resnet50",
          "inception4", "inception3", "googlenet")
P_SHORT = {"small": 63.5 / 76.0, "large": 16.5 / 24.0}


def samples(artifact: Path) -> list[int]:
    """The artifact's YARN duration samples (seconds)."""
    f = artifact / "simulator" / "yarn-gput10000.csv"
    with f.open(newline="") as fh:
        return [int(float(r["duration"])) for r in csv.DictReader(fh)]


def make(artifact: Path, seed: int) -> list[dict]:
    """The trace's rows (see the module notes)."""
    rng = random.Random(seed)
    pool = samples(artifact)
    short = [d for d in pool if 120 <= d < 800]
    long_ = [d for d in pool if 800 <= d <= 7200]
    gpus = [g for g, n in GPUS.items() for _ in range(n)]
    models = [m for m in MODELS for _ in range(48)]
    rng.shuffle(gpus)
    rng.shuffle(models)
    rows, t = [], 0
    for i, (g, m) in enumerate(zip(gpus, models)):
        size = "small" if g <= 4 else "large"
        d = rng.choice(short if rng.random() < P_SHORT[size] else long_)
        gap = int(round(rng.expovariate(1 / 30.0)))
        rows.append({"job_id": i, "num_gpu": g, "submit_time": t, "iterations": d,
                     "model_name": m, "duration": d, "interval": gap})
        t += gap
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", required=True, help="a checkout of SymbioticLab/Tiresias")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--out", required=True, help="the trace to write (CSV)")
    args = ap.parse_args(argv)
    try:
        rows = make(Path(args.artifact), args.seed)
    except (OSError, KeyError, ValueError) as exc:
        print(f"tiresias_trace: {args.artifact}: cannot read the YARN samples ({exc})",
              file=sys.stderr)
        return 2
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
