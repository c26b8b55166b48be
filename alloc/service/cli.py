"""``alloc serve``: run the HTTP/JSON service.

Imports nothing of the service extra until it runs, so that without FastAPI
and uvicorn the command prints how to install them and exits 2.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import install_hint

TOKEN_ENV = "ALLOC_SERVICE_TOKEN"
INSTALL_HINT = "alloc serve: needs the service extra; install it with: " + install_hint(
    "service", "fastapi uvicorn swagger-ui-bundle-v2")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive(kind):
    def parse(text):
        v = kind(text)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
        return v
    return parse


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``alloc serve``."""
    p = _Parser(prog="alloc serve", description="Serve alloc over HTTP/JSON (OpenAPI at "
                "/openapi.json, interactive at /docs).")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8642, help="TCP port (default: 8642)")
    p.add_argument("--token", default=None,
                   help=f"bearer token every /v1 request must carry (default: the {TOKEN_ENV} "
                        f"environment variable; none: open)")
    p.add_argument("--max-body", type=_positive(int), default=16 * 1024 * 1024, metavar="BYTES",
                   help="largest request body; larger ones get 413 (default: 16777216)")
    p.add_argument("--workers", type=_positive(int), default=4, metavar="N",
                   help="threads serving requests in one process, so that sessions stay in "
                        "memory; solvers that release the interpreter lock run in parallel "
                        "(default: 4)")
    p.add_argument("--max-sessions", type=_positive(int), default=256, metavar="N",
                   help="sessions held at once; more get 429 (default: 256)")
    p.add_argument("--session-idle", type=float, default=3600.0, metavar="S",
                   help="a session without a request for S seconds expires; 0: never "
                        "(default: 3600)")
    p.add_argument("--max-time-limit", type=_positive(float), default=60.0, metavar="S",
                   help="largest time limit a request may ask, and the default (default: 60)")
    p.add_argument("--max-gpus", type=_positive(int), default=100_000, metavar="N",
                   help="largest cluster a request may describe, in GPUs (default: 100000)")
    p.add_argument("--log-level", default="warning",
                   choices=("critical", "error", "warning", "info", "debug"),
                   help="server log level (default: warning)")
    return p


def serve_main(argv: list[str] | None = None) -> int:
    """Run ``alloc serve`` with ``argv``; returns the exit code."""
    args = parser().parse_args(argv)
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    from .app import ServiceConfig, create_app
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    cfg = ServiceConfig(token=token, max_body=args.max_body, max_sessions=args.max_sessions,
                        session_idle_s=args.session_idle if args.session_idle > 0 else None,
                        max_time_limit=args.max_time_limit, max_gpus=args.max_gpus,
                        workers=args.workers)
    app = create_app(cfg)
    print(f"alloc serve: http://{args.host}:{args.port} (OpenAPI at /openapi.json; "
          f"{'token required' if token else 'no token'})", file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    except OSError as exc:
        print(f"alloc serve: cannot listen on {args.host}:{args.port} ({exc.strerror})",
              file=sys.stderr)
        return 2
    return 0


__all__ = ["serve_main", "parser"]
