"""Sweeps: grids of allocation, simulation and openb runs over seeds, on a
local process pool or a Ray cluster, streamed to JSON lines and resumable.

Modules: :mod:`.config` (loading and validation of ``alloc.sweep/1``),
:mod:`.grid` (the runs and their stable keys), :mod:`.worker` (one run -> one
row), :mod:`.executors` (process pool, Ray), :mod:`.store` (JSON lines,
Parquet), :mod:`.summary` (statistics, table, plot), :mod:`.cli` (``alloc
sweep``).
"""
from .config import SweepConfig, config_from_dict, load_config
from .grid import Run, build_runs
from .cli import SweepResult, run_sweep, sweep_main

__all__ = ["SweepConfig", "config_from_dict", "load_config", "Run", "build_runs",
           "SweepResult", "run_sweep", "sweep_main"]
