"""Write a generated instance (alloc.experiments.generators) to a file.

    python bench/generate_scale.py --kind synergy --servers 1024 --seed 1 --out synergy-1024.json
    python bench/generate_scale.py --kind openb --gpus 60000 --seed 1 --out openb-60k.json
    python bench/generate_scale.py --kind live --servers 64 --param running=0.5 --out live.json

``--servers``, ``--jobs-per-server`` and ``--gpus`` are shortcuts for the
generator parameters of those names; ``--param KEY=VALUE`` (repeatable, VALUE
read as JSON when it parses) passes any other.  The instance is written in the
``alloc.instance/1`` format, one line per server and job, with the generator,
seed and parameters recorded under ``generator``.  Prints the size and the
seconds taken to stderr.  Exit 2 on bad input.
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
from alloc.experiments.generators import GENERATORS, generate  # noqa: E402
from alloc.io import dump_instance  # noqa: E402


def parse_param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise InputError(f"--param: expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kind", required=True, help=f"generator: {', '.join(GENERATORS)}")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default: 1)")
    ap.add_argument("--servers", type=int, help="servers (synergy, hetero, live; "
                                                "default: the generator's)")
    ap.add_argument("--jobs-per-server", type=float,
                    help="jobs per server (synergy, hetero, live; default: 8)")
    ap.add_argument("--gpus", type=int, help="about this many GPUs (openb; default: 6000)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="any other generator parameter (repeatable; default: none)")
    ap.add_argument("--out", required=True, metavar="FILE", help="instance file to write")
    args = ap.parse_args(argv)
    try:
        params = dict(parse_param(p) for p in args.param)
        for key in ("servers", "jobs_per_server", "gpus"):
            if getattr(args, key) is not None:
                params[key] = getattr(args, key)
        t0 = time.perf_counter()
        inst = generate(args.kind, args.seed, **params)
        t1 = time.perf_counter()
    except InputError as exc:
        print(f"generate_scale: {exc}", file=sys.stderr)
        return 2
    dump_instance(inst, args.out)
    t2 = time.perf_counter()
    print(f"{args.out}: {inst.name}: {len(inst.cluster.servers)} servers, "
          f"{inst.cluster.total_gpus} GPUs, {len(inst.jobs)} jobs; generated in {t1 - t0:.2f} s, "
          f"written in {t2 - t1:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
