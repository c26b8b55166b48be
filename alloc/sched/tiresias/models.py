r"""What Tiresias knows of each DNN model: the skew of its tensor sizes and
the time a preemption costs it.

Facts from the Tiresias paper (Gu et al., NSDI'19):

* Table 6 (Appendix B): the ten TensorFlow benchmark models of the testbed,
  their size (MB) and the *largest tensor ratio*, the size of the largest
  tensor over the model's size.  This ratio is the skew $S_J$ the profiler
  measures (§3.3.1): the VGG family and AlexNet are dominated by one tensor
  (61-77 %), the others are not (3.6-14.6 %), and Fig. 3 shows that only
  the former slow down when their GPUs are spread.
* §3.3.2: a job whose skew exceeds ``PACKLIMIT`` is consolidated on as few
  servers as possible; the rest are placed to decrease fragmentation.  The
  paper learns ``PACKLIMIT`` with a linear classifier and gives no value;
  any value between the two groups of Table 6 (14.6 % and 61.0 %) splits the
  models the same way.  We fix `PACKLIMIT` = 0.5.
* Fig. 4: seconds the chief worker takes to checkpoint each model when a job
  is paused (`CHECKPOINT_S`).
* §5.2.4: the testbed's measured preemption overhead, 13,724 s over 221
  preemptions under Tiresias-L (62.1 s each on average), 17,425 s over 297
  under Tiresias-G and 18,057 s over 316 under SRTF (`PREEMPTION_S`: the
  Tiresias-L mean, checkpoint, rebuild, restore and warm-up together).

Model names are matched without case; a model not in the table has no known
skew (treated as not skewed) and the mean checkpoint time.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

#: Table 6: model -> (model size in MB, largest tensor ratio).
TABLE6: Mapping[str, tuple[float, float]] = MappingProxyType({
    "vgg19": (548.1, 0.715), "vgg16": (527.8, 0.743), "vgg11": (506.8, 0.773),
    "alexnet": (235.9, 0.610), "resnet152": (230.2, 0.039), "resnet101": (170.4, 0.053),
    "resnet50": (97.7, 0.092), "inception4": (162.9, 0.036), "inception3": (91.0, 0.086),
    "googlenet": (26.7, 0.146),
})

#: Fig. 4: model -> seconds to checkpoint it when its job is paused.
CHECKPOINT_S: Mapping[str, float] = MappingProxyType({
    "vgg19": 2.7, "vgg16": 2.3, "vgg11": 1.9, "alexnet": 1.3, "resnet152": 26.3,
    "resnet101": 17.8, "resnet50": 9.4, "inception4": 22.2, "inception3": 14.1,
    "googlenet": 5.7,
})

#: The skew above which a job is consolidated (§3.3.2; see the module notes).
PACKLIMIT = 0.5

#: Mean seconds one preemption cost on the testbed under Tiresias-L (§5.2.4).
PREEMPTION_S = 13724 / 221


def skew(model: str | None) -> float | None:
    """The model's largest tensor ratio (Table 6), None when unknown.

    Examples
    --------
    >>> from alloc.sched.tiresias.models import skew
    >>> skew("VGG16"), skew("ResNet50"), skew("mystery")
    (0.743, 0.092, None)
    """
    if not model:
        return None
    row = TABLE6.get(model.lower())
    return None if row is None else row[1]


def consolidate(model: str | None, packlimit: float = PACKLIMIT) -> bool:
    r"""Tiresias' placement rule: consolidate when $S_J$ > ``packlimit``.

    Examples
    --------
    >>> from alloc.sched.tiresias.models import consolidate
    >>> [consolidate(m) for m in ("vgg19", "alexnet", "inception3", None)]
    [True, True, False, False]
    """
    s = skew(model)
    return s is not None and s > packlimit


def checkpoint_s(model: str | None) -> float:
    """Seconds to checkpoint the model (Fig. 4; the mean of the ten when unknown).

    Examples
    --------
    >>> from alloc.sched.tiresias.models import checkpoint_s
    >>> checkpoint_s("resnet152"), round(checkpoint_s(None), 2)
    (26.3, 10.37)
    """
    if model and model.lower() in CHECKPOINT_S:
        return CHECKPOINT_S[model.lower()]
    return sum(CHECKPOINT_S.values()) / len(CHECKPOINT_S)


__all__ = ["CHECKPOINT_S", "PACKLIMIT", "PREEMPTION_S", "TABLE6", "checkpoint_s", "consolidate",
           "skew"]
