"""``alloc serve``: the library over HTTP/JSON for schedulers that are not
written in Python (Kubernetes scheduler extenders in Go, Slurm plugins in C).

Needs the optional ``service`` extra (FastAPI and uvicorn), imported only
when the service is used.  [`create_app`][alloc.service.create_app] builds the application
(`app`, routes in `routes`), `alloc.service.cli.serve_main`
runs it, [`run_in_thread`][alloc.service.run_in_thread] serves it from a background thread (tests,
examples).
"""
from __future__ import annotations


def create_app(config=None):
    """The FastAPI application (see `alloc.service.app`)."""
    from .app import create_app as make
    return make(config)


def run_in_thread(app, host: str = "127.0.0.1", port: int = 0):
    """Serve ``app`` from a background thread (see `alloc.service.server`)."""
    from .server import run_in_thread as run
    return run(app, host, port)


__all__ = ["create_app", "run_in_thread"]
