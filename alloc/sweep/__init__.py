"""Sweeps: grids of allocation, simulation and openb runs over seeds, on a
local process pool or a Ray cluster, streamed to JSON lines and resumable.

Modules: [`config`][alloc.sweep.config] (loading and validation of ``alloc.sweep/1``),
`grid` (the runs and their stable keys), `worker` (one run -> one
row), `executors` (process pool, Ray), `store` (JSON lines,
Parquet), `summary` (statistics, table, plot), `cli` (``alloc
sweep``).
"""
from .config import SweepConfig, config_from_dict, load_config
from .grid import Run, build_runs
from .cli import SweepResult, run_sweep, sweep_main

__all__ = ["SweepConfig", "config_from_dict", "load_config", "Run", "build_runs",
           "SweepResult", "run_sweep", "sweep_main"]
