r"""Orders from the registry for schedulers outside the simulator: the Slurm
and Blox adapters and the HTTP service rank their jobs with any registered
order policy (``alloc policies --kind order``; a plug-in's too).

`build_order` resolves an order by name (``"las"``, ``"las:quantum_gpu_s=600"``
or ``("las", {...})``) and refuses, in one line, one whose declared needs the
caller cannot give (an adapter knows when each job was submitted, how many
GPUs it asks for, whether it runs and the GPU-seconds it has held while
watched, not how long it will run: ``srtf`` is refused there).  `View` is the
`alloc.sched.JobView` an adapter builds for each job, and `Ranker` keeps
the attained service of a [`Session`][alloc.session.Session]'s jobs on the
caller's clock and sets the session's order before each round.

Examples
--------
>>> from alloc import Cluster, Job, Server, Session
>>> from alloc.sched.views import Ranker
>>> s = Session(Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),)))
>>> r = Ranker(s, "las")
>>> s.submit(Job("a", 2, cpu=1000, mem=1000))
>>> r.rank(0.0), [p.job for p in s.step().start]
(['a'], ['a'])
>>> s.submit(Job("b", 2, cpu=1000, mem=1000))
>>> r.rank(100.0)             # a has held 2 GPUs for 100 s
['b', 'a']
>>> Ranker(s, "srtf")
Traceback (most recent call last):
...
alloc.errors.InputError: order policy 'srtf' needs duration (each job's run time alone and what is left of it (an oracle)), which this scheduler's jobs do not give
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..model import Cluster, frozen_map
from .kinds import Context
from .registry import DECLARATION, NEEDS_MEANING, PolicyInfo, get_policy

#: What an adapter's jobs give: attained service (kept on its clock) and priority.
ADAPTER_GIVES = frozenset({"attained", "priority"})


def parse_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"name:k=v,k2=v2"`` -> ``(name, {k: v, ...})`` (values read as JSON
    when they parse, else as strings).

    Examples
    --------
    >>> from alloc.sched.views import parse_spec
    >>> parse_spec("las:preemptive=false,starvation_s=3600")
    ('las', {'preemptive': False, 'starvation_s': 3600})
    """
    name, _, rest = text.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise InputError(f"{name}: parameter {item!r}: expected KEY=VALUE")
        try:
            params[k.strip()] = json.loads(v)
        except ValueError:
            params[k.strip()] = v
    return name.strip(), params


def build_order(spec: Any, gives: frozenset = ADAPTER_GIVES) -> tuple[Any, PolicyInfo | None]:
    """The order policy object of ``spec`` (a name, ``"name:k=v"``, ``(name,
    params)`` or an object) and its declaration.

    Raises
    ------
    InputError
        One line: not registered, of another kind, bad parameters, or needs
        that ``gives`` lacks.
    """
    params: dict[str, Any] = {}
    if isinstance(spec, tuple) and len(spec) == 2:
        spec, params = spec[0], dict(spec[1] or {})
    elif isinstance(spec, str) and ":" in spec:
        spec, params = parse_spec(spec)
    info: PolicyInfo | None
    if isinstance(spec, str):
        info = get_policy("order", spec)
        obj = info.build(**params)
    else:
        obj = spec
        found = getattr(spec, DECLARATION, None) or getattr(type(spec), DECLARATION, None)
        info = found if isinstance(found, PolicyInfo) else None
    if info is not None:
        missing = sorted(info.needs - gives)
        if missing:
            m = missing[0]
            raise InputError(f"{info.label} needs {m} ({NEEDS_MEANING[m]}), which this "
                             f"scheduler's jobs do not give")
    if not callable(getattr(obj, "rank", None)):
        raise InputError(f"order: {type(obj).__name__} has no rank(jobs, ctx)")
    return obj, info


@dataclass
class View:
    """A job as an adapter sees it (an `alloc.sched.JobView`).

    Examples
    --------
    >>> from alloc.sched.views import View
    >>> View("a", 0.0, 2).attained_gpu_s
    0.0
    """
    id: Any
    arrival_s: float
    gpus: int
    model: str | None = None
    duration_s: float | None = None
    remaining_s: float | None = None
    attained_s: float = 0.0
    attained_gpu_s: float = 0.0
    restarts: int = 0
    running: bool = False
    last_run_s: float = 0.0
    priority: int = 0
    extra: Mapping[str, Any] = field(default_factory=frozen_map)
    min_gpus: int | None = None
    max_gpus: int | None = None


def rank(order: Any, views: Sequence[View], now: float, cluster: Cluster,
         round_no: int = 0) -> list:
    """The views' ids, highest first, by ``order`` (a policy object)."""
    ctx = Context(now, round_no, cluster, {v.id: v for v in views})
    out = list(order.rank(list(views), ctx))
    if sorted(map(repr, out)) != sorted(repr(v.id) for v in views):
        raise InputError(f"order {type(order).__name__}: expected every job once")
    return out


class Ranker:
    """Ranks a session's jobs with a registered order, keeping their attained
    service on the caller's clock.

    Parameters
    ----------
    session : Session
    order : str, tuple or object
        An order policy (see `build_order`).
    arrival : mapping, optional
        A job's arrival time by id (default: the clock when first seen).

    Notes
    -----
    At each `rank` call with time ``now``, every job the session has running
    gains ``gpus * milli/1000 * (now - last)`` GPU-seconds (and
    ``now - last`` seconds) of attained service; the ranked ids become the
    session's order (`Session.set_order`).
    """

    def __init__(self, session: Any, order: Any, arrival: Mapping | None = None) -> None:
        self.session = session
        self.order, self.info = build_order(order)
        self.arrival = dict(arrival or {})
        self.attained: dict = {}
        self.attained_gpu: dict = {}
        self.last_run: dict = {}
        self.last: float | None = None
        self.rounds = 0

    @property
    def preemptive(self) -> bool:
        """The order's ``preemptive`` (False when it has none)."""
        return bool(getattr(self.order, "preemptive", False))

    def observe(self, now: float) -> None:
        """Credit the running jobs since the last call."""
        s = self.session
        dt = 0.0 if self.last is None else max(0.0, now - self.last)
        for jid, job in s.jobs.items():
            self.arrival.setdefault(jid, now)
            if job.current is not None:
                held = sum(g.milli for g in job.current.gpus) / 1000.0
                self.attained[jid] = self.attained.get(jid, 0.0) + dt
                self.attained_gpu[jid] = self.attained_gpu.get(jid, 0.0) + dt * held
                self.last_run[jid] = now
        for d in (self.attained, self.attained_gpu, self.last_run, self.arrival):
            for jid in [x for x in d if x not in s.jobs]:
                del d[jid]
        self.last = now

    def views(self, now: float) -> list[View]:
        """The session's jobs as views."""
        out = []
        for jid, job in self.session.jobs.items():
            arrival = float(self.arrival.get(jid, now))
            out.append(View(jid, arrival, job.gpus, job.model,
                            attained_s=self.attained.get(jid, 0.0),
                            attained_gpu_s=self.attained_gpu.get(jid, 0.0),
                            running=job.current is not None,
                            last_run_s=float(self.last_run.get(jid, arrival)),
                            priority=job.priority))
        return out

    def rank(self, now: float) -> list:
        """Observe, rank and set the session's order; returns the ranked ids."""
        self.observe(now)
        self.rounds += 1
        ranked = rank(self.order, self.views(now), now, self.session.cluster, self.rounds)
        self.session.set_order(ranked, where="order")
        return ranked


__all__ = ["ADAPTER_GIVES", "Ranker", "View", "build_order", "parse_spec", "rank"]
