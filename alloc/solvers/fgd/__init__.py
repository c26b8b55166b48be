"""Online GPU-sharing placement (the FGD experiment, Weng et al., ATC'23).

Each solver places the jobs one at a time in order with one node-scoring
policy of `alloc.solvers.fgd.engine` (its class: `alloc.solvers.fgd.solvers.new_policy`
by the solver's name); running jobs stay where they run.
"""
from ...options import Option
from ...registry import declare

_E = "alloc.solvers.fgd.solvers:"
_LOOK = (
    Option("lam", "float", 0.5, "weight of the CPU-stranding look-ahead term", minimum=0.0),
    Option("reserve", "float", 1.3, "GPU-model reservation horizon (x the trace demand)",
           minimum=0.0),
    Option("mu", "float", 10.0, "weight of the share-packing reduced cost", minimum=0.0),
    Option("share_res", "int", 1000, "resolution of the share-packing prices (milli)",
           minimum=1),
    Option("cpu_pods", "bool", True, "count CPU-only pods in the stranding term"),
)

#: the caller's target workload (typical pods), in place of the pending jobs'
_TARGET = Option("target", "mapping", None,
                 "typical pods of the target workload: lists c (milli-CPU), m (milli-GPU per "
                 "GPU), k (GPUs), types (GPU-model lists), p (popularities) and optionally "
                 "typed_demand ([models, share] pairs); default: from the pending jobs",
                 nullable=True)
_ONE = (_TARGET,)
_LOOK_ALL = _LOOK + _ONE

SOLVERS = (
    declare("random", _E + "solve_random", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_ONE,
            description="Online: uniformly random feasible server (FGD paper baseline)"),
    declare("dotprod", _E + "solve_dotprod", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_ONE,
            description="Online: smallest dot product of free and requested CPU/GPU"),
    declare("gpu-clustering", _E + "solve_gpu_clustering", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_ONE,
            description="Online: cluster GPU jobs of the same kind on a server"),
    declare("gpu-packing", _E + "solve_gpu_packing", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_ONE,
            description="Online: pack onto partly used GPUs, then used servers"),
    declare("openb-best-fit", _E + "solve_openb_best_fit", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_ONE,
            description="Online: least CPU+GPU left over on the server (FGD paper's BestFit)"),
    declare("fgd", _E + "solve_fgd", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_ONE, ignores_unfit=True,
            description="Online: fragmentation gradient descent (Weng et al., ATC'23)"),
    declare("fgd-lookahead", _E + "solve_fgd_lookahead", objectives=(), capabilities=("sharing", "order-preemption"),
            options=_LOOK_ALL,
            description="Online: FGD plus CPU-stranding, share-packing and GPU-model "
                        "look-ahead terms"),
)

#: What the FGD experiment (`alloc.experiments.openb`) and the sweeps use of
#: the family, loaded from `alloc.solvers.fgd.engine` on first use: the
#: experiment's cluster state and fragmentation measure, its pods, and the
#: rule of its bounded moves (`MoveSimulator`) ...
_ENGINE = ("MILLI", "ClusterState", "FragModel", "Pod", "MoveSimulator")
#: ... and, from `alloc.solvers.fgd.solvers`, each solver's policy class and
#: the ``target`` option of a target workload
_SOLVERS = ("ALGORITHM", "new_policy", "target_option", "target_model")


def __getattr__(name):
    if name in _ENGINE:
        from . import engine
        return getattr(engine, name)
    if name in _SOLVERS:
        from . import solvers
        return getattr(solvers, name)
    raise AttributeError(name)
