"""``alloc simulate CONFIG.json [--out RESULT.json]``: Synergy's experiment
from a configuration file, on the one simulator (`alloc.sim.synergy`).

CONFIG (schema ``alloc/schemas/simulate.schema.json``):

```json
{"cluster": {"servers": 16, "gpus_per_server": 8,
             "cpu_per_server": 24000, "mem_per_server": 512000},
 "workload": {"jobs_per_hour": 9, "split": [20, 70, 10], "gpu_mix": "single",
              "window": [4000, 4999], "seed": 0, "trace": "optional.csv"},
 "order": "fifo", "allocator": "synergy-tune", "round_s": 300}
```

``alloc simulate pollux|sia --workload ... --policy ...`` runs the Pollux
or Sia artifact's experiment instead (`alloc.goodput.cli`).

A trace path is relative to the config file; ``trace_format`` is ``csv``
(Synergy's trace CSV, default) or ``philly`` (models drawn by the class
split).  ``order`` is any registered order policy.  Bad input raises
[`InputError`][alloc.errors.InputError] (one line naming the field, and the
line for traces); `simulate_main` prints it and returns 2.  The other form,
``alloc simulate WORKLOAD --servers N ...``, is `alloc.sim.run_cli`.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from ..errors import InputError
from ..io import plain_numbers, write_output
from .jobs import WorkloadJob
from .workload import CLASS_ORDER, MODEL_CLASSES, ModelAssigner, SyntheticWorkload

DEFAULT_WINDOW = (4000, 4999)


@dataclass
class ConfigRun:
    """A configuration's run, ready to go (`run` gives a result whose
    ``summary()`` has the configuration form's keys)."""
    cluster: Any
    jobs: Iterable[WorkloadJob]
    order: str
    allocator: str
    round_s: float
    window: tuple[int, int] | None
    max_time_s: float | None
    span: bool
    opt_time_limit: float
    progress: bool = False

    def run(self) -> "ConfigResult":
        """Simulate (`alloc.sim.synergy.simulate_synergy`)."""
        from .synergy import simulate_synergy
        return ConfigResult(simulate_synergy(
            self.cluster, self.jobs, order=self.order, allocator=self.allocator,
            round_s=self.round_s, window=self.window, max_time_s=self.max_time_s,
            span=self.span, opt_time_limit=self.opt_time_limit))


@dataclass
class ConfigResult:
    """A configuration run's result."""
    result: Any

    def summary(self) -> dict:
        """`alloc.sim.synergy.legacy_summary` of the run."""
        from .synergy import legacy_summary
        return legacy_summary(self.result)


def _profiles():
    from ..profiles import available_models, load_profile
    return available_models(), load_profile


def build(doc: dict, base: Path | None = None, source: str = "config"):
    """Validate a config document; return ``(ConfigRun, config)``."""
    from ..schema import schema_problems
    from .synergy import cluster as make_cluster
    probs = schema_problems(doc, "simulate")
    if probs:
        raise InputError(probs, source)
    c = doc["cluster"]
    cl = make_cluster(c["servers"], c["gpus_per_server"], c["cpu_per_server"],
                      c["mem_per_server"])
    w = dict(doc.get("workload", {}))
    known, load_profile = _profiles()
    classes = w.get("classes") or {k: list(v) for k, v in MODEL_CLASSES.items()}
    for cname, models in classes.items():
        for i, m in enumerate(models):
            if m not in known:
                raise InputError(f"{source}: workload.classes.{cname}[{i}]: unknown model {m!r}; "
                                 f"expected one of {', '.join(known)}")
    split = w.get("split", [20, 70, 10])
    if len(split) != len(classes):
        raise InputError(f"{source}: workload.split: expected {len(classes)} numbers "
                         f"(one per class: {', '.join(classes)}), got {len(split)}")
    if sum(split) <= 0:
        raise InputError(f"{source}: workload.split: expected a positive total")
    if "classes" not in w:
        classes = {k: MODEL_CLASSES[k] for k in CLASS_ORDER}
    window = tuple(w.get("window", DEFAULT_WINDOW))
    if window[0] > window[1]:
        raise InputError(f"{source}: workload.window: expected first <= last, got {list(window)}")
    allocator = doc.get("allocator", "synergy-tune")
    from ..registry import use
    try:
        use(allocator)  # a name, or "module:function"
    except ValueError as exc:
        raise InputError(f"{source}: allocator: {exc}") from None
    order = doc.get("order", "fifo")
    from ..sched import get_policy
    try:
        get_policy("order", order)
    except InputError as exc:
        raise InputError(f"{source}: order: {exc}") from None
    total = c["servers"] * c["gpus_per_server"]
    jobs: Iterable[WorkloadJob]
    if "trace" in w:
        from .workloads import read_workload
        path = Path(w["trace"])
        if base is not None and not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise InputError(f"{source}: workload.trace: file not found: {w['trace']}")
        if w.get("trace_format", "csv") == "philly":
            assign = ModelAssigner(split, classes)
            jobs = [replace(j, model=assign()) for j in
                    read_workload(path, "philly", max_gpus=total).jobs]
        else:
            def iter_time(m):
                return float(load_profile(m).meta.get("iter_time_s", 1.0))
            jobs = read_workload(path, "synergy", models=known, iter_time=iter_time,
                                 max_gpus=total).jobs
        win = window if "window" in w else None
    else:
        if "jobs_per_hour" not in w:
            raise InputError(f"{source}: workload.jobs_per_hour: required without a trace")
        mix = w.get("gpu_mix", "single")
        if mix == "multi" and 8 > total:
            raise InputError(f"{source}: workload.gpu_mix: 'multi' has 8-GPU jobs, wider than "
                             f"the cluster's {total} GPUs")
        jobs = SyntheticWorkload(w["jobs_per_hour"], split, mix, w.get("seed", 0), classes)
        win = window
    run = ConfigRun(cl, jobs, order, allocator, float(doc.get("round_s", 300)),
                    tuple(win) if win is not None else None, doc.get("max_time_s"),
                    doc.get("span", True), doc.get("opt_time_limit", 10.0))
    cfg = {"cluster": c, "workload": w, "order": order, "allocator": allocator,
           "round_s": doc.get("round_s", 300)}
    return run, cfg


def load_config(path: str | Path):
    """Read and validate a simulation config file: ``(Simulator, config)``;
    messages name the path as given."""
    from ..io import read_json
    from ..shipped import resolve
    p = resolve(path, "examples")
    doc = read_json(p, "simulation config")
    return build(doc, p.resolve().parent, str(path))


def _config_form(argv: list[str]) -> bool:
    """True for ``alloc simulate CONFIG.json [--out FILE]``: no ``--servers``
    and a positional that is a JSON config (a ``.json`` file, or a shipped
    example's name)."""
    if any(a == "--servers" or a.startswith("--servers=") for a in argv):
        return False
    pos = [a for a in argv if not a.startswith("-")]
    if not pos:
        return False
    name = pos[0]
    if name.endswith(".json"):
        return True
    from ..shipped import resolve
    try:
        return resolve(name, "examples").suffix == ".json" and not Path(name).exists()
    except (InputError, OSError, ValueError):
        return False


def simulate_main(argv: list[str]) -> int:
    """``alloc simulate``: run one simulation; returns the exit code.

    Two forms: ``alloc simulate WORKLOAD --servers N --gpus-per-server G
    --order NAME --placement NAME ... --out DIR`` (`alloc.sim.run_cli`) and
    the configuration form ``alloc simulate CONFIG.json [--out FILE]``;
    ``alloc simulate pollux|sia ...`` runs the Pollux or Sia artifact's
    experiment instead (`alloc.goodput.cli`)."""
    if argv and argv[0] in ("pollux", "sia") and not Path(argv[0]).is_file():
        from ..goodput.cli import main
        return main(argv)
    if not _config_form(argv):
        from .run_cli import run_main
        return run_main(argv)
    ap = argparse.ArgumentParser(prog="alloc simulate",
                                 description="round-based cluster simulation (Synergy)")
    ap.add_argument("config", help="simulation config (JSON)")
    ap.add_argument("--out", help="write the result JSON here (default: stdout)")
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bar (default: shown when stderr is a terminal)")
    args = ap.parse_args(argv)
    try:
        sim, cfg = load_config(args.config)
        sim.progress = not args.no_progress and sys.stderr.isatty()
        res = sim.run()
        out = res.summary()
        out["config"] = cfg
        text = json.dumps(plain_numbers(out), indent=1)
        write_output(args.out or None, text + "\n")
    except InputError as exc:
        print(f"alloc: {exc}", file=sys.stderr)
        return 2
    print(f"alloc: {cfg['order']}/{cfg['allocator']}: {out['jobs_measured']} jobs, mean JCT "
          f"{out['mean_jct_s'] / 3600:.2f} h, p99 {out['p99_jct_s'] / 3600:.2f} h, "
          f"wall {out['wall_time_s']:.1f} s", file=sys.stderr)
    return 0
