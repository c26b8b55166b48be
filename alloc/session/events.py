"""Session events in JSON form (what ``alloc serve`` accepts, and what
[`alloc.session.Session.apply`][alloc.session.Session.apply] takes besides Python objects).

One event is an object with a ``type`` and its fields:

==================  ===============================================  =======================
type                fields                                           effect
==================  ===============================================  =======================
``submit``          ``job``: a job of the instance format            a new job
``finish``          ``job``: id                                      the job completed
``fail_job``        ``job``: id, ``requeue``: bool (default false)   it failed (or waits again)
``stop``            ``job``: id, ``requeue``: bool (default false)   stopped on purpose (or waits)
``preempt``         ``job``: id                                      waits; not placed next round
``reconcile``       ``running``: {id: [GPU, ...] or null} or [id]    what runs, as the caller sees it
``fail_server``     ``server``: id                                   its jobs wait again
``drain_server``    ``server``: id                                   no new placements there
``undrain_server``  ``server``: id                                   open again
``add_server``      ``server``: a server of the instance format      a new server
``set_priority``    ``job``: id, ``priority``: -1000..1000           new priority
``set_order``       ``order``: list of ids, highest rank first       explicit ranks (null: none)
==================  ===============================================  =======================

Jobs and servers use the ``alloc.instance/1`` fields and are checked against
the same JSON Schema (``alloc/schemas/instance.schema.json``), then by meaning
when the event is applied.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Mapping

from ..errors import InputError
from ..model import Job, Server


@lru_cache(maxsize=None)
def _validator(definition: str):
    import jsonschema
    text = resources.files("alloc").joinpath("schemas/instance.schema.json").read_text()
    full = json.loads(text)
    schema = dict(full["$defs"][definition])
    schema["$defs"] = full["$defs"]
    return jsonschema.validators.validator_for(full)(schema)


def _schema_check(doc: Any, definition: str, where: str) -> None:
    from ..schema import describe, number_problems, path_str
    errs = sorted(_validator(definition).iter_errors(doc),
                  key=lambda e: list(map(str, e.absolute_path)))
    out = []
    for e in errs:
        msg = describe(e)
        if path_str(e.absolute_path):
            out.append(f"{where}.{msg}")
        else:
            out.append(f"{where}: {msg.split(': ', 1)[-1]}")
    out += [f"{where}.{x}" for x in number_problems(doc)]
    if out:
        raise InputError(out)


def job_from_dict(doc: Any, where: str = "job") -> Job:
    """A [`Job`][alloc.model.Job] from its ``alloc.instance/1`` form (schema-checked; the
    model name is resolved later, by the session): read as an instance file
    reads it ([`alloc.io.job_from_doc`][alloc.io.job_from_doc])."""
    from ..io import job_from_doc
    _schema_check(doc, "job", where)
    return job_from_doc(doc)


def server_from_dict(doc: Any, where: str = "server") -> Server:
    """A [`Server`][alloc.model.Server] from its ``alloc.instance/1`` form (schema-checked):
    read as an instance file reads it ([`alloc.io.server_from_doc`][alloc.io.server_from_doc])."""
    from ..io import server_from_doc
    _schema_check(doc, "server", where)
    return server_from_doc(doc)


def _field(ev: Mapping, key: str, where: str, default: Any = ...) -> Any:
    if key not in ev:
        if default is not ...:
            return default
        raise InputError(f"{where}: missing field {key!r}")
    return ev[key]


def _submit(s, ev, where):
    job = _field(ev, "job", where)
    if not isinstance(job, Job):
        job = job_from_dict(job, f"{where}.job")
    return s.submit(job, where=where)


def _add_server(s, ev, where):
    srv = _field(ev, "server", where)
    if not isinstance(srv, Server):
        srv = server_from_dict(srv, f"{where}.server")
    return s.add_server(srv, where=where)


def _reconciled(r) -> dict:
    return {"started": list(r.started), "moved": list(r.moved), "stopped": list(r.stopped)}


#: Event type -> (its fields, handler(session, event, where)).
EVENTS: dict[str, tuple[tuple[str, ...], Callable]] = {
    "submit": (("job",), _submit),
    "finish": (("job",), lambda s, ev, w: s.finish(_field(ev, "job", w), where=w)),
    "fail_job": (("job", "requeue"), lambda s, ev, w: s.fail_job(
        _field(ev, "job", w), requeue=_field(ev, "requeue", w, False), where=w)),
    "stop": (("job", "requeue"), lambda s, ev, w: s.stop(
        _field(ev, "job", w), requeue=_field(ev, "requeue", w, False), where=w)),
    "preempt": (("job",), lambda s, ev, w: s.preempt(_field(ev, "job", w), where=w)),
    "reconcile": (("running",), lambda s, ev, w: _reconciled(
        s.reconcile(_field(ev, "running", w), where=w))),
    "fail_server": (("server",), lambda s, ev, w: list(s.fail_server(_field(ev, "server", w),
                                                                     where=w))),
    "drain_server": (("server",), lambda s, ev, w: s.drain_server(_field(ev, "server", w),
                                                                  where=w)),
    "undrain_server": (("server",), lambda s, ev, w: s.undrain_server(
        _field(ev, "server", w), where=w)),
    "add_server": (("server",), _add_server),
    "set_priority": (("job", "priority"), lambda s, ev, w: s.set_priority(
        _field(ev, "job", w), _field(ev, "priority", w), where=w)),
    "set_order": (("order",), lambda s, ev, w: s.set_order(_field(ev, "order", w), where=w)),
}


def apply_event(session, ev: Any, where: str = "event") -> Any:
    """Apply one event (a mapping, see the module notes) to ``session``;
    returns the event's result (``fail_server``: the requeued job ids;
    ``reconcile``: the jobs started, moved and stopped)."""
    if not isinstance(ev, Mapping):
        raise InputError(f"{where}: expected an object with a 'type', got {str(ev)[:60]!r}")
    kind = ev.get("type")
    spec = EVENTS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        raise InputError(f"{where}.type: expected one of {', '.join(EVENTS)}, "
                         f"got {str(kind)[:60]!r}")
    fields, handler = spec
    extra = sorted(k for k in ev if k != "type" and k not in fields)
    if extra:
        raise InputError(f"{where}: unknown key {extra[0]!r} for a {kind} event; expected "
                         f"{', '.join(fields)}")
    return handler(session, ev, where)


__all__ = ["EVENTS", "apply_event", "job_from_dict", "server_from_dict"]
