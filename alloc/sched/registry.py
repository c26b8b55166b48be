"""The one registry of scheduling policies: every kind, built in, plug-ins and
registered at run time, behind one lookup.

A policy is a *factory*: a class or function that takes the policy's declared
parameters as keywords and returns the policy object of its kind
(`alloc.sched.kinds`).  Its declaration (`PolicyInfo`) says its kind, its
name, one line of summary, what it needs to read (`NEEDS_MEANING`) and its
parameters (`alloc.options.Option`, validated with the one error template of
solver options).

Where policies come from:

1. **Built-in packages** under `alloc.sched` (`PACKAGES`), each listing its
   policies in a ``POLICIES`` tuple built with `declare`.  A factory's module
   is imported only when the policy is built.
2. **Placement policies are alloc's solvers**: every solver of
   [`alloc.solvers`][alloc.registry.solvers] is listed here as a policy of kind
   ``placement`` under its own name (its options are its parameters).
3. **Share policies** are the time-share policies of [`alloc.shares`][alloc.shares],
   listed as kind ``shares``.
4. **Plug-ins**: an installed package declares an entry point in the group
   ``alloc.policies`` whose name is the policy's name and whose value is
   ``"module:factory"``; the factory carries its declaration (the `policy`
   decorator), which gives its kind.
5. **Run-time registration**: `register_policy(factory)` for a decorated factory.

A (kind, name) pair is taken once.  Names may repeat across kinds (``drf`` is
a placement solver and may be an order too): a lookup always names the kind.
A plug-in that fails to load is listed with the reason and never breaks the
listing; building it raises [`InputError`][alloc.errors.InputError].
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from ..errors import InputError
from ..options import Option, validate_options
from .kinds import KIND_MEANING, KINDS

#: What a policy may declare it reads, with what each means; a simulator or an
#: adapter refuses a policy whose needs its jobs cannot give, in one line.
NEEDS_MEANING: Mapping[str, str] = {
    "duration": "each job's run time alone and what is left of it (an oracle)",
    "attained": "each job's attained service (seconds and GPU-seconds held so far)",
    "throughput": "each job's throughput on each GPU type (Gavel-style tables)",
    "pairs": "throughputs of pairs of jobs sharing GPUs (space sharing)",
    "goodput": "each job's goodput model (throughput and statistical efficiency)",
    "profile": "each job's throughput-sensitivity profile (CPU and memory)",
    "gpu-memory": "each job's GPU memory (MiB per GPU)",
    "priority": "each job's priority",
}
#: The names a policy may list in ``needs``.
NEEDS = frozenset(NEEDS_MEANING)

class PolicyError(InputError):
    """A policy (or a plug-in) raised during a run: the message names it, the
    round and the time, and the error it raised; the run ends."""


#: Packages under `alloc.sched` that declare built-in policies (``POLICIES``).
PACKAGES: tuple[str, ...] = ("orders", "pop", "allox", "salus", "themis", "tiresias", "pollux",
                            "sia", "antman", "gavel", "pipeswitch", "gandiva", "drop")

#: The entry-point group plug-ins declare their policies in.
ENTRY_POINT_GROUP = "alloc.policies"

#: The attribute a decorated factory carries its declaration in.
DECLARATION = "__alloc_policy__"


@dataclass(frozen=True)
class PolicyInfo:
    """A policy's declaration.

    Parameters
    ----------
    kind : str
        One of `alloc.sched.kinds.KINDS`.
    name : str
        The name a stack and the command line use (``--order las``).
    entry : str
        ``"module:factory"`` (imported when the policy is built); empty for a
        factory registered at run time.
    summary : str
        One line.
    needs : frozenset of str
        Members of `NEEDS` it reads.
    params : tuple of Option
        Its declared parameters.
    factory : callable, optional
        The factory itself (registered at run time).
    origin : str
        Where it comes from: empty for a built-in one, the package or
        ``"registered"`` otherwise.
    broken : str
        Why it cannot be built (a plug-in that does not load); empty when it can.

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> info = get_policy("order", "las")
    >>> info.kind, info.name, sorted(info.needs)
    ('order', 'las', ['attained'])
    """
    kind: str
    name: str
    entry: str = ""
    summary: str = ""
    needs: frozenset = frozenset()
    params: tuple[Option, ...] = ()
    factory: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    origin: str = ""
    broken: str = ""

    @property
    def label(self) -> str:
        """How messages name it: ``order policy 'las'``."""
        return f"{self.kind} policy {self.name!r}"

    def build(self, **params: Any) -> Any:
        """The policy object, its parameters validated (defaults filled in).

        Raises
        ------
        InputError
            One line: a parameter that is not declared or not what the
            declaration expects, a policy that cannot be loaded, or a factory
            that raised (named, with the error).
        """
        if self.broken:
            raise InputError(f"{self.label} cannot be used: {self.broken}")
        try:
            values = validate_options(self.label, self.params, params)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        fn = self.factory if self.factory is not None else _load(self.entry, self.label)
        try:
            return fn(**values)
        except InputError:
            raise
        except Exception as exc:
            raise InputError(f"{self.label} failed to build: {type(exc).__name__}: {exc}") from None

    def to_dict(self) -> dict:
        """JSON-ready form (``alloc policies --json``)."""
        return {"kind": self.kind, "name": self.name, "summary": self.summary,
                "needs": sorted(self.needs), "params": [o.to_dict() for o in self.params],
                "origin": self.origin, "available": not self.broken,
                "unavailable_reason": self.broken or None}


def declare(kind: str, name: str, entry: str = "", *, summary: str = "",
            needs: Sequence[str] = (), params: Sequence[Option] = ()) -> PolicyInfo:
    """A `PolicyInfo`, its kind, needs and parameters checked.

    Raises
    ------
    ValueError
        An unknown kind or need, a name that is empty or has ``:``, or
        parameters that are not `alloc.options.Option` values.

    Examples
    --------
    >>> from alloc.sched import declare
    >>> declare("order", "fifo", "alloc.sched.orders.basic:Fifo", summary="arrival time").kind
    'order'
    """
    if kind not in KIND_MEANING:
        raise ValueError(f"policy kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(name, str) or not name.strip() or ":" in name or len(name) > 256:
        raise ValueError(f"policy name: expected a non-empty name without ':', got {name!r}")
    if isinstance(needs, str):
        raise ValueError(f"needs: expected a list of names, got {needs!r}")
    unknown = set(needs) - NEEDS
    if unknown:
        raise ValueError(f"unknown needs {sorted(unknown)}; valid: {sorted(NEEDS)}")
    if not all(isinstance(o, Option) for o in params):
        raise ValueError("params: expected alloc.Option declarations")
    return PolicyInfo(kind, name, entry, summary, frozenset(needs), tuple(params))


def policy(kind: str, name: str | None = None, *, summary: str | None = None,
           needs: Sequence[str] = (), params: Sequence[Option] = ()) -> Callable:
    """Decorator declaring what a factory is, without registering it.

    The declaration travels with the factory, so that a plug-in's entry point
    and `register_policy` read the same facts.  ``name`` defaults to the
    factory's name, ``summary`` to the first line of its docstring.

    Examples
    --------
    >>> from alloc.sched import KeyOrder, policy
    >>> @policy("order", "fewest-gpus", summary="fewest GPUs first")
    ... class FewestGpus(KeyOrder):
    ...     def key(self, job, ctx):
    ...         return job.gpus
    >>> FewestGpus.__alloc_policy__.kind
    'order'
    """
    def deco(fn: Callable) -> Callable:
        line = (fn.__doc__ or "").strip().splitlines()
        info = declare(kind, name or fn.__name__, "", needs=needs, params=params,
                       summary=summary if summary is not None else (line[0] if line else ""))
        setattr(fn, DECLARATION, info)
        return fn
    return deco


def _load(entry: str, label: str) -> Callable:
    mod, _, attr = entry.partition(":")
    try:
        obj = getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{label} cannot be loaded from {entry!r}: {exc}") from None
    if not callable(obj):
        raise InputError(f"{label}: {entry!r} is not callable")
    return obj


# ------------------------------------------------------------------ sources
_BUILTIN: dict[tuple[str, str], PolicyInfo] = {}
_EXTRA: dict[tuple[str, str], PolicyInfo] = {}
_EP: dict = {"path": None, "infos": {}}


def _builtin() -> dict[tuple[str, str], PolicyInfo]:
    if not _BUILTIN:
        for pkg in PACKAGES:
            for info in importlib.import_module(f"alloc.sched.{pkg}").POLICIES:
                _BUILTIN[info.kind, info.name] = info
    return _BUILTIN


def _placements() -> dict[tuple[str, str], PolicyInfo]:
    from ..registry import solvers
    out = {}
    for name, s in solvers().items():
        out["placement", name] = PolicyInfo(
            "placement", name, s.entry, s.description, frozenset(), s.options,
            origin=s.origin, broken=s.unavailable_reason() or "")
    return out


def _shares() -> dict[tuple[str, str], PolicyInfo]:
    from ..shares.policies import POLICIES
    from .timeshare import COMMON, factory
    out = {}
    for name, spec in POLICIES.items():
        needs = {"throughput"} | ({"duration"} if spec.needs_steps else set())
        out["shares", name] = PolicyInfo("shares", name, "alloc.sched.timeshare:factory",
                                         spec.description, frozenset(needs),
                                         tuple(spec.options) + COMMON, factory=factory(name))
    return out


def _plugins() -> dict[tuple[str, str], PolicyInfo]:
    """Installed plug-ins (rescanned when `sys.path` changes)."""
    key = tuple(sys.path)
    if _EP["path"] != key:
        from importlib.metadata import entry_points
        infos: dict[tuple[str, str], PolicyInfo] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            infos.update([_plugin(ep)])
        _EP["path"], _EP["infos"] = key, infos
    return _EP["infos"]


def _plugin(ep: Any) -> tuple[tuple[str, str], PolicyInfo]:
    dist = getattr(getattr(ep, "dist", None), "name", None) or ep.value
    origin = f"entry point {ENTRY_POINT_GROUP} of {dist}"
    try:
        fn = ep.load()
        info = getattr(fn, DECLARATION)
    except Exception as exc:
        why = f"plug-in does not load: {type(exc).__name__}: {exc}"
        return ("mechanism", ep.name), PolicyInfo("mechanism", ep.name, ep.value, origin=origin,
                                                   broken=why)
    return (info.kind, ep.name), replace(info, name=ep.name, entry=ep.value, factory=fn,
                                         origin=origin)


def register_policy(factory: Callable, *, replace_existing: bool = False) -> PolicyInfo:
    """Register a factory decorated with `policy` in this process.

    Raises
    ------
    ValueError
        The factory has no declaration, or its (kind, name) is taken.

    Examples
    --------
    >>> from alloc.sched import KeyOrder, get_policy, policy, register_policy, unregister_policy
    >>> @policy("order", "most-gpus")
    ... class MostGpus(KeyOrder):
    ...     '''most GPUs first'''
    ...     def key(self, job, ctx):
    ...         return -job.gpus
    >>> register_policy(MostGpus).summary
    'most GPUs first'
    >>> get_policy("order", "most-gpus").origin
    'registered'
    >>> unregister_policy("order", "most-gpus")
    """
    info = getattr(factory, DECLARATION, None)
    if not isinstance(info, PolicyInfo):
        raise ValueError("register_policy: expected a factory decorated with alloc.sched.policy")
    key = (info.kind, info.name)
    if not replace_existing and key in _all():
        raise ValueError(f"{info.label} is already registered (replace_existing=True replaces it)")
    _EXTRA[key] = replace(info, factory=factory, origin="registered")
    return _EXTRA[key]


def unregister_policy(kind: str, name: str) -> None:
    """Remove a policy registered at run time (built-in ones stay)."""
    _EXTRA.pop((kind, name), None)


def _all(kind: str | None = None) -> dict[tuple[str, str], PolicyInfo]:
    """Every policy (of ``kind`` only, when given: the other sources are not
    loaded)."""
    reg: dict[tuple[str, str], PolicyInfo] = {}
    if kind in (None, "placement"):
        reg.update(_placements())
    if kind in (None, "shares"):
        reg.update(_shares())
    reg.update(b for b in _builtin().items() if kind in (None, b[0][0]))
    for key, info in _plugins().items():
        if kind in (None, key[0]):
            reg.setdefault(key, info)
    reg.update(e for e in _EXTRA.items() if kind in (None, e[0][0]))
    return reg


def policies(kind: str | None = None) -> list[PolicyInfo]:
    """Every policy, sorted by kind (in `KINDS` order) then name; one kind
    when ``kind`` is given.

    Examples
    --------
    >>> from alloc.sched import policies
    >>> {"fifo", "las"} <= {p.name for p in policies("order")}
    True
    >>> "best-fit" in {p.name for p in policies("placement")}
    True
    """
    if kind is not None and kind not in KIND_MEANING:
        raise InputError(f"policy kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    rank = {k: i for i, k in enumerate(KINDS)}
    return sorted((p for p in _all(kind).values() if kind is None or p.kind == kind),
                  key=lambda p: (rank[p.kind], p.name))


def get_policy(kind: str, name: str) -> PolicyInfo:
    """The policy of ``kind`` called ``name``.

    Raises
    ------
    InputError
        One line: an unknown kind; a name registered under another kind only
        (``'best-fit' is a placement policy, not an order policy``); a name
        not registered at all (listing the valid names of the kind).

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> get_policy("placement", "best-fit").kind
    'placement'
    >>> get_policy("order", "best-fit")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    alloc.errors.InputError: 'best-fit' is a placement policy, not an order policy; ...
    """
    if kind not in KIND_MEANING:
        raise InputError(f"policy kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    info = _all(kind).get((kind, name)) if isinstance(name, str) else None
    if info is not None:
        return info
    reg = _all()
    valid = ", ".join(sorted(n for k, n in reg if k == kind)) or "(none)"
    other = sorted(k for k, n in reg if n == name)
    if other:
        raise InputError(f"{name!r} is {_a(' and '.join(other))} policy, not {_a(kind)} policy; "
                         f"{kind} policies: {valid}")
    raise InputError(f"unknown {kind} policy {name!r}; {kind} policies: {valid} (a plug-in is a "
                     f"package declaring entry point group {ENTRY_POINT_GROUP!r})")


def _a(word: str) -> str:
    return ("an " if word[:1] in "aeiou" else "a ") + word


__all__ = ["DECLARATION", "ENTRY_POINT_GROUP", "NEEDS", "NEEDS_MEANING", "PACKAGES", "PolicyError",
           "PolicyInfo",
           "declare", "get_policy", "policies", "policy", "register_policy", "unregister_policy"]
