"""Switching costs and batch times of PipeSwitch's experiments (Bai et al.,
OSDI'20), read from ``alloc/sim/data/pipeswitch_costs.json`` (every number
with its source: Table 3, Table 1, section 6.1).

Mechanisms that share one GPU between a training task and inference:

* ``pipeswitch`` -- the training task is preempted and the inference model
  is pipelined onto the GPU: a switch costs milliseconds (Table 3: 5.4 to
  34.6 ms);
* ``stop_and_start`` -- the training process stops and the inference process
  starts from scratch: seconds (5.4 to 7.5 s);
* ``mps`` -- NVIDIA MPS: the training task keeps running, the inference
  process shares the GPU: a first batch pays hundreds of milliseconds
  (193 to 338 ms) and the next ones run at the contended latency.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..datafiles import read_data_file
from ..errors import InputError

#: The mechanisms, as named in the data file.
MECHANISMS = ("pipeswitch", "stop_and_start", "mps")
DATA_FILE = "sim/data/pipeswitch_costs.json"
FORMAT = "alloc.pipeswitch-costs/1"


@dataclass(frozen=True)
class SwitchCosts:
    """Per GPU type and model: switch cost per mechanism (ms), ready batch
    time (ms), contended batch time under MPS (ms)."""
    switch_ms: Mapping[str, Mapping[str, Mapping[str, float]]]
    inference_ms: Mapping[str, Mapping[str, float]]
    mps_latency_ms: Mapping[str, Mapping[str, float]]

    def switch_s(self, gpu_type: str, model: str, mechanism: str, where: str = "model") -> float:
        """Seconds one switch to ``model`` costs on ``gpu_type`` (InputError
        naming ``where`` when the data has no figure)."""
        check_mechanism(mechanism)
        got = self.switch_ms.get(gpu_type, {}).get(model, {}).get(mechanism)
        if got is None:
            raise InputError(f"{where}: no switch cost for {model!r} on {gpu_type} with "
                             f"{mechanism}; known models: "
                             f"{', '.join(self.switch_ms.get(gpu_type, {})) or 'none'}")
        return got / 1e3

    def batch_s(self, gpu_type: str, model: str, mechanism: str = "pipeswitch",
                where: str = "model") -> float:
        """Seconds one inference batch takes (under MPS: the contended time)."""
        table = self.mps_latency_ms if mechanism == "mps" else self.inference_ms
        got = table.get(gpu_type, {}).get(model)
        if got is None:
            kind = "contended (MPS) batch time" if mechanism == "mps" else "inference time"
            raise InputError(f"{where}: no {kind} for {model!r} on {gpu_type}; known: "
                             f"{', '.join(table.get(gpu_type, {})) or 'none'}")
        return got / 1e3


def check_mechanism(mechanism) -> str:
    """``mechanism`` when it is one of `MECHANISMS`, else InputError."""
    if mechanism not in MECHANISMS:
        raise InputError(f"mechanism: expected one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    return mechanism


def _table(doc, key: str, depth: int, where: str) -> dict:
    t = doc.get(key)
    if not isinstance(t, Mapping):
        raise InputError(f"{where}{key}: expected an object")

    def walk(node, path, d):
        if d == 0:
            if isinstance(node, bool) or not isinstance(node, (int, float)) \
                    or not math.isfinite(node) or node < 0:
                raise InputError(f"{where}{path}: expected a number >= 0 (ms), got {node!r}")
            return float(node)
        if not isinstance(node, Mapping):
            raise InputError(f"{where}{path}: expected an object")
        return {k: walk(v, f"{path}.{k}", d - 1) for k, v in node.items()}
    return walk(t, key, depth)


def load_costs(path: str | Path | None = None) -> SwitchCosts:
    """The costs of the data file (default: the shipped one); InputError
    naming the file and field for bad data."""
    where = f"{path}: " if path is not None else ""
    doc = read_data_file(path, DATA_FILE, FORMAT)
    sw = _table(doc, "switch_ms", 3, where)
    for t, models in sw.items():
        for m, mech in models.items():
            for k in mech:
                if k not in MECHANISMS:
                    raise InputError(f"{where}switch_ms.{t}.{m}.{k}: unknown mechanism; "
                                     f"expected one of {', '.join(MECHANISMS)}")
    return SwitchCosts(sw, _table(doc, "inference_ms", 2, where),
                       _table(doc, "mps_latency_ms", 2, where))


__all__ = ["DATA_FILE", "FORMAT", "MECHANISMS", "SwitchCosts", "check_mechanism", "load_costs"]
