"""The routes of `alloc.service.app` (plain functions run on the worker
threads; the library calls inside are the ones a Python scheduler makes)."""
from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from .. import __version__
from ..deadline import DEFAULT_TIME_LIMIT
from ..errors import InputError
from . import models as m
from .errors import Refused
from .schemas import ref


def _time_limit(cfg, asked: float | None) -> float:
    """The request's time limit within the service's cap (the cap by default)."""
    if asked is None:
        return min(DEFAULT_TIME_LIMIT, cfg.max_time_limit)
    if asked > cfg.max_time_limit:
        raise Refused(400, f"time_limit: at most {cfg.max_time_limit:g} s on this service, "
                           f"got {asked:g}")
    return asked


def _check_size(cfg, servers: Any, where: str) -> None:
    """Refuse clusters over the service's GPU limit before building them."""
    total = 0
    if isinstance(servers, list):
        for s in servers:
            g = s.get("gpus", 0) if isinstance(s, dict) else 0
            total += g if isinstance(g, int) and not isinstance(g, bool) and g > 0 else 0
    if total > cfg.max_gpus:
        raise Refused(400, f"{where}: {total} GPUs, this service takes at most {cfg.max_gpus} "
                           f"(--max-gpus)")


def _settings(body: m.Settings) -> dict:
    return dict(solver=body.solver, objective=body.objective, seed=body.seed,
                max_moves=body.max_moves, move_cost=body.move_cost, preempt=body.preempt)


def add_routes(app: FastAPI, auth) -> None:
    """Register every endpoint on ``app`` (``auth``: the token dependency)."""
    from ..registry import solvers
    cfg, store = app.state.config, app.state.store
    deps = [auth]

    @app.get("/healthz", response_model=m.HealthOut, tags=["service"])
    def healthz():
        """Liveness: the service answers (no token needed)."""
        return {"status": "ok", "version": __version__}

    @app.get("/v1/solvers", response_model=list[m.SolverOut], dependencies=deps,
             responses=_errs(401), tags=["library"])
    def list_solvers():
        """Registered solvers: exact or heuristic, available or why not,
        capabilities, declared options."""
        return [info.to_dict() for info in solvers().values()]

    @app.get("/v1/policies", response_model=list[m.PolicyOut], dependencies=deps,
             responses=_errs(400, 401), tags=["library"])
    def list_policies(kind: str | None = Query(None, description="one kind only")):
        """Registered scheduling policies (``alloc policies``): kind, name,
        summary, needs and parameters."""
        from ..sched import policies
        return [p.to_dict() | {"kind": p.kind} for p in policies(kind)]

    @app.post("/v1/solve", dependencies=deps, tags=["library"],
              responses={200: {"content": {"application/json": {"schema": ref("Allocation")}},
                               "description": "the allocation (alloc.allocation/1)"},
                         **_errs(400, 401, 413, 422, 503)})
    def solve(body: m.SolveIn):
        """Place an instance's jobs: ``allocate()`` on an ``alloc.instance/1``,
        answered with an ``alloc.allocation/1`` (checked by ``violations()``)."""
        from ..io import allocation_to_dict, instance_from_dict
        from ..solve import allocate
        tl = _time_limit(cfg, body.time_limit)
        _check_size(cfg, _servers(body.instance), "instance.cluster.servers")
        inst = instance_from_dict(body.instance, "instance")
        if body.preempt is not None and "preempt" in body.options:
            from ..errors import InputError
            raise InputError("preempt: given both as a setting and as a solver option")
        a = allocate(inst.cluster, inst.jobs, time_limit=tl,
                     instance=inst.name, order=body.order, strict=body.strict,
                     **{**_settings(body), **body.options})
        return JSONResponse(allocation_to_dict(a))

    @app.post("/v1/check", response_model=m.CheckOut, dependencies=deps, tags=["library"],
              responses=_errs(400, 401, 413, 422))
    def check(body: m.CheckIn):
        """Every hard constraint an allocation breaks (empty: valid)."""
        from ..check import violations
        from ..io import allocation_from_dict, instance_from_dict
        _check_size(cfg, _servers(body.instance), "instance.cluster.servers")
        inst = instance_from_dict(body.instance, "instance")
        alloc = allocation_from_dict(body.allocation, "allocation")
        bad = violations(inst.cluster, inst.jobs, alloc, max_moves=body.max_moves)
        return {"valid": not bad, "violations": bad}

    add_session_routes(app, deps, cfg, store)


def _servers(doc: Any) -> Any:
    c = doc.get("cluster") if isinstance(doc, dict) else None
    return c.get("servers") if isinstance(c, dict) else None


def _errs(*codes: int) -> dict:
    return {c: {"model": m.ErrorOut} for c in codes}


def add_session_routes(app: FastAPI, deps, cfg, store) -> None:
    """The ``/v1/sessions`` endpoints."""

    @app.post("/v1/sessions", status_code=201, response_model=m.SessionOut, dependencies=deps,
              tags=["sessions"], responses=_errs(400, 401, 413, 422, 429, 503))
    def create(body: m.SessionIn):
        """Open a session on a cluster (with tenants, inline models and starting
        jobs in the instance format) with the settings of its rounds."""
        from ..io import instance_from_dict
        from ..session import Session
        tl = _time_limit(cfg, body.time_limit)
        _check_size(cfg, body.cluster.get("servers"), "cluster.servers")
        doc = {"format": "alloc.instance/1", "name": body.name, "cluster": body.cluster,
               "jobs": body.jobs}
        if body.tenants:
            doc["tenants"] = body.tenants
        if body.models:
            doc["models"] = body.models
        inst = instance_from_dict(doc, "session")
        if body.order_policy is not None and body.order is not None:
            raise InputError("order_policy: give an order policy or an explicit order, not both")
        s = Session(inst.cluster, jobs=inst.jobs, models=inst.models, options=body.options,
                    time_limit=tl, order=body.order,
                    name=body.name, **_settings(body))
        ranker = None
        if body.order_policy is not None:
            from ..sched.views import Ranker
            ranker = Ranker(s, body.order_policy)
        sid = store.add(s, ranker)
        return {"id": sid, "state": s.to_dict(jobs=False)}

    @app.get("/v1/sessions", response_model=m.SessionsOut, dependencies=deps,
             tags=["sessions"], responses=_errs(401))
    def list_sessions():
        """Ids of the open sessions."""
        return {"sessions": store.ids()}

    @app.get("/v1/sessions/{sid}", response_model=m.SessionOut, dependencies=deps,
             tags=["sessions"], responses=_errs(401, 404, 422))
    def get_session(sid: str, jobs: bool = Query(True, description="list the jobs")):
        """The session's state: servers, closed servers, jobs with their
        placements, order, settings, counts."""
        with store.use(sid) as s:
            return {"id": sid, "state": s.to_dict(jobs=jobs)}

    @app.delete("/v1/sessions/{sid}", response_model=m.DeletedOut, dependencies=deps,
                tags=["sessions"], responses=_errs(401, 404, 422))
    def delete_session(sid: str):
        """Close a session."""
        store.delete(sid)
        return {"deleted": sid}

    @app.post("/v1/sessions/{sid}/events", response_model=m.EventsOut, dependencies=deps,
              tags=["sessions"], responses=_errs(400, 401, 404, 413, 422))
    def post_events(sid: str, body: m.EventsIn):
        """Apply events in order, atomically: all of them, or (400, naming the
        first bad one) none."""
        events = [e.model_dump(exclude_unset=True) for e in body.events]
        added = [e["server"] for e in events if e["type"] == "add_server"]
        with store.use(sid) as s:
            if added:
                _check_size(cfg, [{"gpus": s.cluster.total_gpus}, *added],
                            "add_server: the cluster would have")
            results = s.apply(events)
            return {"session": sid, "applied": len(events), "events": s.events,
                    "results": results}

    @app.post("/v1/sessions/{sid}/rounds", dependencies=deps, tags=["sessions"],
              responses={200: {"model": m.RoundOut}, **_errs(400, 401, 404, 413, 422, 503)})
    def post_round(sid: str, body: m.RoundIn | None = None):
        """Run one round: jobs to start, move and preempt (each with its GPUs
        and CPU/memory per server), jobs left waiting with reasons."""
        body = body or m.RoundIn()
        with store.use(sid) as s:
            tl = _time_limit(cfg, body.time_limit if body.time_limit is not None
                             else s.time_limit)
            ranker = store.ranker(sid)
            if ranker is not None:
                ranker.rank(time.monotonic())
            r = s.step(time_limit=tl)
            out = r.to_dict(allocation=body.allocation)
        return JSONResponse({"session": sid, **out})
