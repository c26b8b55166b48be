"""Round-based cluster simulator reproducing Synergy's experiments.

Every ``round_s`` seconds (default 300) the runnable jobs are ordered by a
scheduling policy (`policies`) and re-placed from scratch by an
allocator (``proportional``, ``synergy-greedy``, ``synergy-tune``,
``synergy-opt`` or any registered solver); between rounds jobs progress at
their throughput (1.0 = speed at the GPU-proportional share) and finish at the
exact time their work is done.  See [`engine`][alloc.sim.gandiva.engine].
"""
from .engine import ClusterSpec, SimResult, Simulator, simulate
from .workload import MODEL_CLASSES, SimJob, SyntheticWorkload


_GAVEL = ("GAVEL_CLUSTER", "GavelJob", "GavelResult", "SIM_POLICIES", "ThroughputTable",
          "gavel_workload", "simulate_gavel")


def __getattr__(name):
    # the heterogeneous (Gavel) simulator, loaded on first use
    if name in _GAVEL:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.gavel"), name)
    raise AttributeError(name)


__all__ = ["ClusterSpec", "MODEL_CLASSES", "SimJob", "SimResult", "Simulator",
           "SyntheticWorkload", "simulate", *_GAVEL]
