"""The HTTP/JSON application (FastAPI): the library's calls and sessions for
schedulers that are not written in Python.

Endpoints (JSON in, JSON out; the file formats of the design notes inside):

* ``GET /healthz`` -- liveness (no token needed);
* ``GET /v1/solvers`` -- registered solvers, their capabilities and options;
* ``GET /v1/policies`` -- registered scheduling policies (``?kind=order``); a
  session created with ``order_policy`` ranks its jobs with one before each
  round;
* ``POST /v1/solve`` -- an ``alloc.instance/1`` and settings -> an
  ``alloc.allocation/1``;
* ``POST /v1/check`` -- an instance and an allocation -> its violations;
* ``POST /v1/sessions`` -- a cluster (with tenants, inline models, starting
  jobs) and settings -> a session id;
* ``GET /v1/sessions`` / ``GET|DELETE /v1/sessions/{id}``;
* ``POST /v1/sessions/{id}/events`` -- a list of events, applied atomically;
* ``POST /v1/sessions/{id}/rounds`` -- run a round -> start / move / preempt /
  unplaced.

Errors are ``{"error": "<one line>"}``: 400 for what the library refuses
(its own message), 401 without the bearer token, 404 for an unknown session
or path, 413 for a body over the limit, 422 for a request of the wrong shape
(malformed JSON, a missing or mistyped request field; a wrong type inside an
instance, job or event is the library's 400),
429 when the session table is full, 503 when a solver's backend is missing;
never a stack trace.  Requests to one session are serialised by its lock;
different sessions run in parallel.
"""
from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Any, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import SolverError, SolverUnavailable
from . import models as m
from .errors import Refused
from .limits import BodyLimit
from .routes import add_routes
from .schemas import add_components
from .store import SessionStore, TooManySessions, UnknownSession

log = logging.getLogger("alloc.service")


@dataclass(frozen=True)
class ServiceConfig:
    """Limits and access of one service.

    Attributes
    ----------
    token : str or None
        Bearer token every ``/v1`` request must carry (None: open).
    max_body : int
        Largest request body in bytes.
    max_sessions : int
        Sessions held at once.
    session_idle_s : float or None
        Seconds without a request after which a session expires (None: never).
    max_time_limit : float
        Largest time limit (seconds) a request may ask; also the default.
    max_gpus : int
        Largest cluster (GPUs) a request may describe.
    workers : int
        Threads serving requests (solvers run on them).
    """
    token: str | None = None
    max_body: int = 16 * 1024 * 1024
    max_sessions: int = 256
    session_idle_s: float | None = 3600.0
    max_time_limit: float = 60.0
    max_gpus: int = 100_000
    workers: int = 4


_ERR = {"model": m.ErrorOut}
ERRORS = {400: _ERR, 401: _ERR, 413: _ERR, 422: _ERR}
SESSION_ERRORS = {**ERRORS, 404: _ERR}


def _union_tags() -> frozenset[str]:
    """The event ``type`` tags, which pydantic puts in an error's location."""
    from typing import get_args
    members = get_args(get_args(m.Event)[0])
    return frozenset(t for c in members for t in get_args(c.model_fields["type"].annotation))


_TAGS = _union_tags()


def _location(loc) -> str:
    """A pydantic location in the library's notation (`events[0].job.gpus`),
    without the body prefix and the event-type tags."""
    from ..schema import path_str
    parts = list(loc[1:] if loc[:1] == ("body",) else loc)
    parts = [x for i, x in enumerate(parts)
             if not (i and isinstance(parts[i - 1], int) and x in _TAGS)]
    return path_str(parts) or "body"


def _malformed_json(e: dict, body: bytes) -> str:
    """Where a request body stops being JSON, as line and column."""
    pos = e["loc"][-1] if isinstance(e["loc"][-1], int) else 0
    head = body[:pos].decode("utf-8", "replace")
    line, col = head.count("\n") + 1, len(head) - (head.rfind("\n") + 1) + 1
    reason = (e.get("ctx") or {}).get("error", "not JSON")
    return f"request body: line {line} column {col}: malformed JSON ({reason})"


def _one_line(exc: RequestValidationError, body: bytes = b"") -> str:
    errs = exc.errors()
    if not errs:
        return "malformed request"
    e = errs[0]
    if e.get("type") == "json_invalid":
        return _malformed_json(e, body)[:500]
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return f"{_location(e.get('loc', ()))}: {e.get('msg', 'invalid')}{more}"[:500]


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)  # the one class it is registered for
    return _error(422, _one_line(exc, await request.body()))


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": str(message).split("\n")[0][:2000]}, status_code=status,
                        headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    """Every error as ``{"error": one line}`` with its status."""
    handlers: dict[Any, Callable] = {
        StarletteHTTPException: lambda r, e: _error(e.status_code, e.detail,
                                                    getattr(e, "headers", None)),
        Refused: lambda r, e: _error(e.status, str(e),
                                     {"WWW-Authenticate": "Bearer"} if e.status == 401 else None),
        UnknownSession: lambda r, e: _error(404, str(e)),
        TooManySessions: lambda r, e: _error(429, str(e)),
        SolverUnavailable: lambda r, e: _error(503, str(e)),
        SolverError: lambda r, e: _error(500, str(e)),
        ValueError: lambda r, e: _error(400, str(e)),  # InputError is a ValueError
    }
    for exc, fn in handlers.items():
        app.add_exception_handler(exc, _async(fn))
    app.add_exception_handler(RequestValidationError, _invalid_request)

    async def internal(request: Request, exc: Exception):
        log.exception("internal error on %s %s", request.method, request.url.path)
        return _error(500, f"internal error ({type(exc).__name__}); see the service log")
    app.add_exception_handler(Exception, internal)


def _async(fn):
    async def handler(request, exc):
        return fn(request, exc)
    return handler


def create_app(config: ServiceConfig | None = None) -> FastAPI:
    """The application with its routes, error handlers, body limit and token check."""
    cfg = config or ServiceConfig()
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app):
        import anyio.to_thread
        anyio.to_thread.current_default_thread_limiter().total_tokens = cfg.workers
        yield

    app = FastAPI(title="alloc", version=__version__, lifespan=lifespan, docs_url=None,
                  redoc_url=None,
                  description="Which deep-learning jobs run where on a shared GPU cluster: "
                              "one-shot solves and scheduler sessions over HTTP/JSON.")
    app.state.config = cfg
    app.state.store = SessionStore(cfg.max_sessions, cfg.session_idle_s)
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_body=cfg.max_body)
    bearer = HTTPBearer(auto_error=False)

    def auth(cred: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        if cfg.token is None:
            return
        if cred is None or not hmac.compare_digest(cred.credentials.encode(),
                                                   cfg.token.encode()):
            raise Refused(401, "missing or wrong bearer token (Authorization: Bearer <token>)")

    from .docs import add_docs
    add_routes(app, Depends(auth))
    add_docs(app)

    def openapi():
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi
            from ..registry import solvers
            doc = add_components(get_openapi(title=app.title, version=app.version,
                                             description=app.description, routes=app.routes))
            for name in ("SolveIn", "SessionIn"):
                prop = doc["components"]["schemas"].get(name, {}).get("properties", {})
                if "solver" in prop:
                    prop["solver"]["enum"] = list(solvers())
            app.openapi_schema = doc
        return app.openapi_schema
    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's way to extend the schema
    return app


__all__ = ["ERRORS", "Refused", "SESSION_ERRORS", "ServiceConfig", "create_app"]
