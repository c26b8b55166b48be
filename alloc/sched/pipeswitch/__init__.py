"""PipeSwitch (Bai et al., OSDI'20) over time: GPUs shared by training and
inference, switched at cycle boundaries (`alloc.sched.pipeswitch.switching`:
the mechanism ``switching`` and its progress model).  The switch costs and
the sharing decision are `alloc.pipeswitch`'s.

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("mechanism", "switching").summary.startswith("PipeSwitch")
True
"""
from ...options import Option
from ..registry import declare

POLICIES = (
    declare("mechanism", "switching", "alloc.sched.pipeswitch.switching:switching",
            needs=("duration",),
            params=(Option("decision", "any", None, "the ShareDecision to run "
                           "(alloc.pipeswitch.share_gpus)", nullable=True),
                    Option("horizon_s", "float", 600.0, "cycles start while their start is "
                           "below this (s)", minimum=0.0)),
            summary="PipeSwitch: inference requests switched in beside training at cycle "
                    "boundaries"),
)
