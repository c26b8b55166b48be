"""Executors: run a list of `Run` and yield each result row as soon as its
run finishes (completion order, not grid order).

* `SerialExecutor` — one run after the other in this process (`alloc
  bench`: no run competes with another for the CPU).
* `PoolExecutor` — a local process pool (`spawn` processes, so a worker
  imports the same `alloc` as the parent and shares no state but the
  solvers registered here, handed over as `"module:function"`).
* `RayExecutor` — tasks on a Ray cluster.  Ray is optional and imported
  only here, when the executor starts.  ``address="auto"`` lets Ray decide (an
  existing cluster on this machine or ``RAY_ADDRESS``, else a new local one);
  another address connects to that cluster.  A Ray session that is already
  initialised (e.g. by a test) is used as is and left running.

On a multi-node cluster every node must have alloc installed (with its
``models/`` folder) and every plug-in solver the sweep uses, and instance
files and openb traces must be readable at the same paths on every node.
Solvers registered in the parent process reach Ray tasks as
`"module:function"` as well.

Every executor calls `execute`, a pure function of the run, so
the same grid gives the same rows on each (up to times and memory).  A run
whose worker dies gives a ``crash`` error row (retried on resume).
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Iterator, Sequence

from ..errors import InputError, install_hint
from .grid import Run
from .worker import error_row, execute, execute_with

RAY_INSTALL_HINT = install_hint("ray", "ray")


def crash_row(run: Run, exc: BaseException) -> dict:
    """The row of a run whose worker failed outside `execute`."""
    return {"key": run.key, "kind": run.kind, **run.params, **error_row(run, exc, "crash")}


class SerialExecutor:
    """Runs one after the other in this process."""

    def describe(self) -> str:
        """One line for the log."""
        return "this process, one run at a time"

    def map(self, runs: Sequence[Run]) -> Iterator[dict]:
        """Yield one row per run, in order."""
        for r in runs:
            yield execute(r)


class PoolExecutor:
    """Runs on ``jobs`` local worker processes (default: the CPU count)."""

    def __init__(self, jobs: int | None = None):
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def describe(self) -> str:
        """One line for the log, e.g. ``local pool of 4 processes``."""
        return f"local pool of {self.jobs} process{'es' if self.jobs > 1 else ''}"

    def map(self, runs: Sequence[Run]) -> Iterator[dict]:
        """Yield one row per run as runs finish."""
        if not runs:
            return
        from ..registry import registrations, restore
        ctx = multiprocessing.get_context("spawn")
        ex = ProcessPoolExecutor(max_workers=min(self.jobs, len(runs)), mp_context=ctx,
                                 initializer=restore, initargs=(registrations(),))
        try:
            pending = {ex.submit(execute, r): r for r in runs}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    run = pending.pop(fut)
                    try:
                        yield fut.result()
                    except Exception as exc:  # noqa: BLE001 - a dead worker process
                        yield crash_row(run, exc)
        except BaseException:
            # interrupted (or the consumer stopped): drop queued runs and end the
            # runs in progress now instead of waiting for them; they are not
            # recorded, so a resume runs them again
            procs = list((getattr(ex, "_processes", None) or {}).values())
            for proc in procs:
                proc.terminate()
            ex.shutdown(wait=False, cancel_futures=True)
            raise
        ex.shutdown(wait=True)


def import_ray():
    """The ``ray`` module, or an [`InputError`][alloc.errors.InputError] saying how to install
it."""
    try:
        import ray
    except ImportError:
        raise InputError(f"--ray: Ray is not installed; install it with {RAY_INSTALL_HINT}") \
            from None
    return ray


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Raise [`InputError`][alloc.errors.InputError] unless something listens at a ``HOST:PORT`` or
    ``ray://HOST:PORT`` address (Ray itself retries an unreachable address for
    minutes)."""
    import socket
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise InputError(f"--ray {address}: expected 'auto' or an address HOST:PORT "
                         f"(or ray://HOST:PORT)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise InputError(f"--ray {address}: no Ray cluster answers there "
                         f"({type(exc).__name__})") from None


class RayExecutor:
    """Runs each run as a Ray task (1 CPU each).

    ``address``: ``"auto"`` or a cluster address (``HOST:PORT``,
    ``ray://HOST:PORT``).  ``jobs``: at most this many tasks in flight (default:
    all, Ray queues them); when this executor starts a new local Ray instance it
    also gives it ``jobs`` CPUs.
    """

    def __init__(self, address: str = "auto", jobs: int | None = None):
        self.address = address
        self.jobs = jobs
        self.ray = import_ray()
        if address != "auto":
            check_reachable(address)

    def describe(self) -> str:
        """One line for the log: ``Ray (<address>)``."""
        return f"Ray ({self.address})"

    def _start(self) -> bool:
        """Initialise Ray unless it already is; True when this call started it."""
        ray = self.ray
        if ray.is_initialized():
            return False
        import logging
        kw: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING,
              "log_to_driver": False}
        if self.address != "auto":
            kw["address"] = self.address
        elif self.jobs and not os.environ.get("RAY_ADDRESS"):
            kw["num_cpus"] = self.jobs
        try:
            ray.init(**kw)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise InputError(f"--ray {self.address}: cannot start or reach a Ray cluster "
                             f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                             ) from None
        return True

    def map(self, runs: Sequence[Run]) -> Iterator[dict]:
        """Yield one row per run as runs finish."""
        if not runs:
            return
        from ..registry import registrations
        ray = self.ray
        started = self._start()
        try:
            task = ray.remote(num_cpus=1, max_retries=0)(execute_with)
            registered = ray.put(registrations())
            limit = self.jobs or len(runs)
            queue = list(reversed(runs))
            inflight: dict = {}
            while queue or inflight:
                while queue and len(inflight) < limit:
                    r = queue.pop()
                    inflight[task.remote(registered, r)] = r
                ready, _ = ray.wait(list(inflight), num_returns=1)
                for ref in ready:
                    run = inflight.pop(ref)
                    try:
                        yield ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - worker died, task lost
                        yield crash_row(run, exc)
        finally:
            if started:
                ray.shutdown()


def make_executor(ray_address: str | None, jobs: int | None):
    """A `RayExecutor` when ``ray_address`` is given, else a pool."""
    if ray_address:
        return RayExecutor(ray_address, jobs)
    return PoolExecutor(jobs)
