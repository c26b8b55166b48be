"""Scale of the online GPU-sharing policies on openb-shaped clusters.

Generates, for each size (GPUs), a seeded openb-shaped instance -- node shapes
and pod kinds drawn with replacement from the openb node list and the
``default`` pod list when the shared data folder has them, else from a small
built-in table of their most common rows -- with pods arriving until their
GPU demand reaches ``tune`` x capacity (the openb protocol's 130 %), and node
tie-break ranks as a random permutation.  Then places every pod with each
policy's algorithm (the node-scoring policy of its solver,
`alloc.solvers.fgd.solvers.new_policy`, one `alloc.solvers.fgd.engine.place`
per pod: the cost of the placement alone, without a session round) and prints
pods, wall seconds, pods placed and the final allocation (% of GPU capacity).

    python3 bench/fgd_scale.py --sizes 6000,30000,60000,100000
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alloc.experiments import openb  # noqa: E402
from alloc.solvers.fgd.engine import MILLI, ClusterState, FragModel, Pod, place  # noqa: E402
from alloc.solvers.fgd import new_policy  # noqa: E402

POLICIES = ["random", "dotprod", "gpu-clustering", "gpu-packing", "best-fit", "fgd",
            "fgd-lookahead"]
FRAG_POLICIES = {"fgd", "fgd-lookahead"}

# (cpu milli, memory MiB, GPUs, model, nodes in openb) -- openb's GPU node shapes
NODE_SHAPES = [(96000, 393216, 8, "G2", 549), (104000, 524288, 2, "T4", 387),
               (16000, 122880, 2, "P100", 107), (128000, 786432, 8, "G3", 39),
               (32000, 131072, 4, "V100M16", 28), (64000, 262144, 2, "P100", 22),
               (96000, 786432, 8, "V100M32", 21), (8000, 32768, 1, "V100M16", 19),
               (96000, 393216, 4, "T4", 17)]
# (cpu milli, memory MiB, GPUs, milli per GPU, weight) -- common openb pod kinds
POD_KINDS = [(3152, 5600, 1, 810, 1047), (11300, 49152, 1, 1000, 874),
             (11400, 47104, 1, 1000, 599), (3152, 5600, 1, 1000, 470),
             (11908, 30517, 1, 470, 388), (12500, 48128, 0, 0, 366),
             (8000, 30517, 1, 470, 360), (12000, 16384, 1, 1000, 326),
             (32000, 65536, 0, 0, 290), (18708, 47104, 1, 1000, 255),
             (11908, 30517, 1, 650, 237), (4000, 15258, 1, 320, 232),
             (8000, 30517, 2, 1000, 40), (32000, 131072, 8, 1000, 20)]


def _tables():
    """(node shapes, pod kinds) as weighted rows: from openb when present."""
    d = openb.openb_dir()
    nodes_csv, pods_csv = d / "openb_node_list_gpu_node.csv", d / "openb_pod_list_default.csv"
    if not (nodes_csv.exists() and pods_csv.exists()):
        return NODE_SHAPES, POD_KINDS
    nodes, pods = openb.load_nodes(nodes_csv), openb.load_pods(pods_csv)
    shapes = [(int(c), int(m), int(g), t, 1) for c, m, g, t in
              zip(nodes.cpu, nodes.mem, nodes.gpus, nodes.model)]
    kinds = [(int(pods.cpu[i]), int(pods.mem[i]), int(pods.k[i]), int(pods.m[i]), 1,
              pods.types[i]) for i in range(len(pods))]
    return shapes, kinds


def generate(gpus: int, seed: int, tune: float = 1.3):
    """An openb-shaped instance of about ``gpus`` GPUs: (node columns, pods, ranks)."""
    shapes, kinds = _tables()
    rng = np.random.default_rng(seed)
    w = np.array([s[4] for s in shapes], dtype=float)
    nodes, total = [], 0
    while total < gpus:
        s = shapes[int(rng.choice(len(shapes), p=w / w.sum()))]
        nodes.append(s)
        total += s[2]
    kw = np.array([k[4] for k in kinds], dtype=float)
    draws = rng.choice(len(kinds), size=int(3 * total), p=kw / kw.sum())
    pods, demand, target = [], 0, tune * total * MILLI
    for i in draws.tolist():
        k = kinds[i]
        pod = Pod(k[0], k[1], k[2], k[3] if k[2] else 0, tuple(k[5]) if len(k) > 5 and k[2]
                  else ())
        if demand + pod.g > target:
            break
        pods.append(pod)
        demand += pod.g
    cols = ([s[0] for s in nodes], [s[1] for s in nodes], [s[2] for s in nodes],
            [s[3] for s in nodes])
    return cols, pods, rng.permutation(len(nodes))


def run(cols, pods, rank, policy: str, seed: int, fm: FragModel):
    """Place every pod with ``policy``: (wall s, CPU s, placed, allocation %)."""
    state = ClusterState(*cols, rank=rank,
                         frag_model=fm if policy in FRAG_POLICIES else None)
    t0, c0 = time.perf_counter(), time.process_time()
    pol = new_policy(openb.solver_of(policy), seed)
    placed = sum(place(state, pol, pod) is not None for pod in pods)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    return secs, cpu, placed, 100.0 * state.used / state.capacity


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="6000,30000,60000", help="cluster sizes in GPUs")
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated policies")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tune", type=float, default=1.3, help="arrived GPU demand / capacity")
    args = ap.parse_args(argv)
    print(f"{'GPUs':>7} {'nodes':>6} {'policy':<15} {'pods':>7} {'wall s':>7} {'cpu s':>7} "
          f"{'cpu s/1k':>8} {'placed':>7} {'alloc %':>7}")
    for size in [int(x) for x in args.sizes.split(",")]:
        cols, pods, rank = generate(size, args.seed, args.tune)
        fm = FragModel.from_pods(pods)
        for pol in args.policies.split(","):
            secs, cpu, placed, alloc = run(cols, pods, rank, pol, args.seed, fm)
            print(f"{sum(cols[2]):>7} {len(cols[0]):>6} {pol:<15} {len(pods):>7} {secs:7.2f} "
                  f"{cpu:7.2f} {1000 * cpu / max(1, len(pods)):8.3f} {placed:>7} {alloc:7.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
