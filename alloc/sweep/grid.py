"""The run grid of a sweep: one [`Run`][alloc.sweep.Run] per parameter combination.

A run's ``params`` are what it is (JSON values, recorded in its result row);
its ``key`` is a stable hash of them (the resume key); ``inputs`` holds what
the worker needs besides (resolved paths, the full simulation config), which
never enters the key unless it is part of ``params``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..model import frozen_map
from .config import SweepConfig, with_seed_and_cap

KINDS = ("allocation", "simulation", "openb")


@dataclass(frozen=True)
class Run:
    """One run: its kind, stable key, recorded parameters and worker inputs."""
    kind: str
    key: str
    params: Mapping[str, Any]
    inputs: Mapping[str, Any] = field(default_factory=frozen_map)


def canonical(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces) of plain JSON values."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_plain)


def _plain(v):
    if isinstance(v, Mapping):
        return dict(v)
    raise TypeError(f"not JSON-serialisable: {type(v).__name__}")


def run_key(kind: str, params: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of the kind and canonical params."""
    return hashlib.sha256(f"{kind}:{canonical(params)}".encode()).hexdigest()[:16]


def make_run(kind: str, params: Mapping[str, Any], inputs: Mapping[str, Any] | None = None,
             key_extra: Mapping[str, Any] | None = None) -> Run:
    """A [`Run`][alloc.sweep.Run]; ``key_extra`` enters the key without being recorded."""
    keyed = dict(params, **(key_extra or {}))
    return Run(kind, run_key(kind, keyed), frozen_map(params), frozen_map(inputs or {}))


def allocation_runs(cfg: SweepConfig) -> list[Run]:
    """The runs of the allocation section: instance x solver x objective x time
    limit x seed x repeat, in that nesting order.

    Parameters
    ----------
    cfg : SweepConfig
        A validated config with an allocation section.

    Returns
    -------
    list of Run
        Each run records the instance label, solver, objective, time limit
        (seconds; None: the solver's default) and seed.  A file instance is
        keyed by its content digest as well, so that an edited file gives new
        keys; a generated instance records ``generator_seed`` (the spec's
        fixed seed, else the run's seed) and is keyed by its full spec.  The
        repeat number (from 0) and the warm-up count are inputs, recorded in
        the row; a repeat after the first enters the key.  Whether the
        config chose the objective is an input too (`allocate()` is called
        without one when it did not).
    """
    sec = cfg.allocation
    assert sec is not None, "a config with an allocation section"
    out = []
    for inst in sec.instances:
        for solver in sec.solvers:
            for objective in sec.objectives:
                for tl in sec.time_limits:
                    for seed in sec.seeds:
                        params = {"instance": inst.label, "solver": solver,
                                  "objective": objective, "time_limit": tl, "seed": seed}
                        out += _repeats(sec, inst, params, seed)
    return out


def _repeats(sec, inst, params: dict, seed: int) -> list[Run]:
    """The runs of one allocation grid point, one per repeat."""
    if inst.generator:
        gseed = seed if inst.seed is None else inst.seed
        spec = {"generator": inst.generator, "params": dict(inst.params), "seed": gseed}
        params = dict(params, generator_seed=gseed)
        inputs, keyed = {"spec": spec}, {"spec": spec}
    else:
        inputs, keyed = {"path": inst.path}, {"digest": inst.digest}
    inputs["objective_chosen"] = sec.objective_chosen
    return [make_run("allocation", params, dict(inputs, repeat=r, warmup=sec.warmup),
                     dict(keyed, repeat=r) if r else keyed)
            for r in range(sec.repeats)]


def simulation_runs(cfg: SweepConfig) -> list[Run]:
    """The runs of the simulation section: config (one per ``vary``
    combination) x seed.

    Parameters
    ----------
    cfg : SweepConfig
        A validated config with a simulation section.

    Returns
    -------
    list of Run
        Each run records the config label, allocator, order, arrival rate
        (``jobs_per_hour``), GPU mix (None for a trace workload), cluster
        GPUs (servers x GPUs per server), the ``vary`` values and the seed;
        its input and key hold the full simulate config with
        ``workload.seed`` set to the seed.
    """
    sec = cfg.simulation
    assert sec is not None, "a config with a simulation section"
    out = []
    for spec in sec.configs:
        doc = dict(spec.doc)
        w = doc.get("workload", {})
        c = doc.get("cluster", {})
        for seed in sec.seeds:
            full = with_seed_and_cap(doc, seed, None)
            params = {"config": spec.label, "allocator": doc.get("allocator", "synergy-tune"),
                      "order": doc.get("order", "fifo"),
                      "jobs_per_hour": w.get("jobs_per_hour"),
                      "gpu_mix": w.get("gpu_mix", "single") if "trace" not in w else None,
                      "gpus": c.get("servers", 0) * c.get("gpus_per_server", 0),
                      "vary": dict(spec.vary), "seed": seed}
            out.append(make_run("simulation", params, {"doc": full, "base": spec.base},
                                {"doc": full}))
    return out


def openb_runs(cfg: SweepConfig) -> list[Run]:
    """The runs of the openb section: workload x policy x seed.

    Parameters
    ----------
    cfg : SweepConfig
        A validated config with an openb section.

    Returns
    -------
    list of Run
        Each run records the workload name, FGD policy, ``tune`` (arrived GPU
        demand as a multiple of the cluster's GPU capacity) and seed; it is
        keyed by the digests of the pod and node CSVs as well.
    """
    sec = cfg.openb
    assert sec is not None, "a config with an openb section"
    out = []
    for name, path, digest in sec.workloads:
        for policy in sec.policies:
            for seed in sec.seeds:
                params = {"workload": name, "policy": policy, "tune": sec.tune, "seed": seed}
                out.append(make_run("openb", params, {"pods": path, "nodes": sec.nodes},
                                    {"pods": digest, "nodes": sec.nodes_digest}))
    return out


def build_runs(cfg: SweepConfig) -> list[Run]:
    """Every run of the sweep, in grid order.

    Parameters
    ----------
    cfg : SweepConfig
        A validated config.

    Returns
    -------
    list of Run
        Allocation runs (instance x solver x objective x time limit x seed),
        then simulation runs (config x vary combination x seed), then openb
        runs (workload x policy x seed); a run listed twice appears once.
    """
    runs: list[Run] = []
    if cfg.allocation:
        runs += allocation_runs(cfg)
    if cfg.simulation:
        runs += simulation_runs(cfg)
    if cfg.openb:
        runs += openb_runs(cfg)
    seen: set[str] = set()
    unique = []
    for r in runs:  # the same run listed twice (e.g. a repeated seed) runs once
        if r.key not in seen:
            seen.add(r.key)
            unique.append(r)
    return unique
