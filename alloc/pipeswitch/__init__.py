"""PipeSwitch (Bai et al., OSDI'20): one GPU shared over time by training
and inference.

* [alloc.pipeswitch.costs][]: the switch costs of Table 3 per mechanism
  (PipeSwitch, stop-and-start, NVIDIA MPS) and the batch times;
* [alloc.pipeswitch.decide][]: which inference services share GPUs with
  which training jobs at a cycle of $T$ seconds, checked by the core.

Over time the decision runs on the one simulator with the mechanism
``switching`` ([alloc.sched.pipeswitch][]); the experiments are
[alloc.sim.pipeswitch][].
"""
from .costs import MECHANISMS, SwitchCosts, load_costs
from .decide import GpuPlan, Service, ServicePlan, ShareDecision, Training, share_gpus

__all__ = ["GpuPlan", "MECHANISMS", "Service", "ServicePlan", "ShareDecision", "SwitchCosts",
           "Training", "load_costs", "share_gpus"]
