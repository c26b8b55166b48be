"""A stack of policies: one per slot, each given by name, by name with
parameters, or as an object; resolved through the one registry
(`alloc.sched.registry`) and checked against what the run can give.

A slot's value may be:

* ``None``: the slot is empty (``order`` defaults to ``fifo`` and
  ``placement`` to ``best-fit``);
* a name, ``"las"``; or a name with parameters, ``("las", {"preemptive": False})``
  or ``"las:preemptive=false"`` (the command line's form);
* an object of the kind (built by the caller); a factory decorated with
  `alloc.sched.policy` carries its declaration, whose ``needs`` are checked.

``placement`` names a solver of `alloc.registry` (its parameters are the
solver's options); a placement policy registered under another name builds
to the name of a solver.  ``mechanism`` may be a list of mechanisms.

Examples
--------
>>> from alloc.sim.stack import resolve
>>> s = resolve("order", ("las", {"preemptive": False}))
>>> s.name, s.obj.preemptive
('las', False)
>>> resolve("order", "best-fit")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
alloc.errors.InputError: order: 'best-fit' is a placement policy, not an order policy; ...
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..sched.kinds import KINDS
from ..sched.registry import DECLARATION, NEEDS_MEANING, PolicyInfo, get_policy

#: Needs every run answers (the simulator keeps attained service; jobs have
#: a priority, 0 by default).
ALWAYS = frozenset({"attained", "priority"})


@dataclass(frozen=True)
class Slot:
    """One resolved slot of a stack.

    Attributes
    ----------
    kind : str
    name : str
        The policy's name (the object's class name for an object given as is).
    obj : object
        The policy object (for ``placement``: the solver's name).
    info : PolicyInfo or None
        Its declaration, when it has one.
    params : mapping
        The parameters it was built with (the solver's options for ``placement``).
    """
    kind: str
    name: str
    obj: Any
    info: PolicyInfo | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def needs(self) -> frozenset:
        """What it declared it reads."""
        return self.info.needs if self.info is not None else frozenset()

    @property
    def label(self) -> str:
        """``order policy 'las'``."""
        return f"{self.kind} policy {self.name!r}"


def parse_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"name:k=v,k2=v2"`` -> ``(name, {k: v, ...})`` (values read as JSON
    when they parse, else as strings).

    Examples
    --------
    >>> from alloc.sim.stack import parse_spec
    >>> parse_spec("las:preemptive=false,starvation_s=3600")
    ('las', {'preemptive': False, 'starvation_s': 3600})
    """
    import json
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


def resolve(kind: str, spec: Any) -> Slot:
    """The `Slot` of ``spec`` in the ``kind`` slot (see the module notes).

    Raises
    ------
    InputError
        One line: an unknown name, a policy of another kind, bad parameters,
        a factory that raised; each prefixed with the slot.
    """
    if kind not in KINDS:
        raise InputError(f"policy kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    params: dict[str, Any] = {}
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        spec, params = spec[0], dict(spec[1] or {})
    elif isinstance(spec, str) and ":" in spec:
        spec, params = parse_spec(spec)
    if isinstance(spec, str):
        try:
            named = get_policy(kind, spec)
            if kind == "placement":
                return _placement(named, params)
            return Slot(kind, spec, named.build(**params), named, params)
        except InputError as exc:
            raise InputError(f"{kind}: {exc}") from None
    if params:
        raise InputError(f"{kind}: parameters are given with a policy's name, not with an object")
    found = getattr(spec, DECLARATION, None) or getattr(type(spec), DECLARATION, None)
    info = found if isinstance(found, PolicyInfo) else None
    if info is not None and info.kind != kind:
        raise InputError(f"{kind}: {info.name!r} is a {info.kind} policy, not a {kind} policy")
    if kind == "placement":
        raise InputError(f"placement: expected a solver's name, got {type(spec).__name__}")
    name = info.name if info is not None else type(spec).__name__
    return Slot(kind, name, spec, info)


def _placement(info: PolicyInfo, params: dict) -> Slot:
    from ..registry import solvers
    if info.name in solvers():
        return Slot("placement", info.name, info.name, info, params)
    built = info.build(**params)       # a placement policy that names a solver
    if not isinstance(built, str) or built not in solvers():
        raise InputError(f"{info.label} built {built!r}, not the name of a registered solver")
    return Slot("placement", info.name, built, info, {})


def resolve_all(kind: str, spec: Any) -> tuple[Slot, ...]:
    """Every slot of ``spec`` (a list of specs for ``mechanism``; none for None)."""
    if spec is None:
        return ()
    if kind == "mechanism" and isinstance(spec, (list, tuple)) and not (
            len(spec) == 2 and isinstance(spec[0], str) and isinstance(spec[1], Mapping)):
        return tuple(resolve(kind, s) for s in spec)
    return (resolve(kind, spec),)


def check_needs(slots: Sequence[Slot], gives: frozenset, why: Mapping[str, str]) -> None:
    """Refuse, in one line, a policy whose declared needs the run cannot give.

    Parameters
    ----------
    slots : sequence of Slot
    gives : frozenset of str
        What the workload and the progress model give (`ALWAYS` added).
    why : mapping
        For a need not given, what would give it (shown in the message).
    """
    have = gives | ALWAYS
    for s in slots:
        missing = sorted(s.needs - have)
        if missing:
            m = missing[0]
            hint = why.get(m, "")
            raise InputError(f"{s.label} needs {m} ({NEEDS_MEANING[m]}), which this run does "
                             f"not give" + (f": {hint}" if hint else ""))


__all__ = ["ALWAYS", "Slot", "check_needs", "parse_spec", "resolve", "resolve_all"]
