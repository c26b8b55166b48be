"""Kubernetes resource quantities as alloc's integer units.

A quantity is ``<number><suffix>``: decimal suffixes ``n u m k M G T P E``
(10^-9 .. 10^18), binary ones ``Ki Mi Gi Ti Pi Ei`` (2^10 .. 2^60), or an
exponent ``e<k>``.  alloc counts CPU in milli-cores (``ceil(1000 q)``),
memory in MiB (``ceil(q / 2^20)`` for a request, ``floor`` for a capacity)
and GPUs as integers.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_SUFFIX = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
MIB = 2**20


def parse(q: object, where: str = "quantity") -> Fraction:
    """A quantity's exact value (a `Fraction`).

    Raises
    ------
    ValueError
        One line naming ``where`` and what was expected.

    Examples
    --------
    >>> parse("500m"), parse("2Gi") == 2 * 2**30, parse(4)
    (Fraction(1, 2), True, Fraction(4, 1))
    """
    if isinstance(q, bool):
        raise ValueError(f"{where}: expected a quantity, got {q!r}")
    if isinstance(q, int):
        return Fraction(q)
    v = _parse(str(q).strip())
    if v is None:
        raise ValueError(f"{where}: expected a quantity such as 500m, 2Gi or 4, got {q!r}")
    return v


@lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction | None:
    """The value of a quantity's text (None: not a quantity); the same few
    texts recur in every pod, so each is read once."""
    m = _QUANTITY.match(text)
    if not m:
        return None
    num = Fraction(m.group(1))
    if m.group(2):
        return num * Fraction(10) ** int(m.group(2)[1:])
    return num * _SUFFIX[m.group(3) or ""]


@lru_cache(maxsize=4096)
def _ceil_scaled(v: Fraction, scale: int) -> int:
    return math.ceil(v * scale)


def scaled(q: object, scale: int, where: str = "quantity") -> int:
    """``ceil(q * scale)`` (``scale`` 1000: milli-units; 1: whole units, bytes).

    Examples
    --------
    >>> scaled("250m", 1000), scaled("1Ki", 1), scaled("0.5", 1)
    (250, 1024, 1)
    """
    if isinstance(q, str):
        v = _scaled_text(q, scale)
        if v is not None:
            return v
    return _ceil_scaled(parse(q, where), scale)


@lru_cache(maxsize=4096)
def _scaled_text(text: str, scale: int) -> int | None:
    v = _parse(text.strip())
    return None if v is None else math.ceil(v * scale)


def milli_cpu(q: object, where: str = "cpu") -> int:
    """CPU quantity as milli-cores, rounded up.

    Examples
    --------
    >>> milli_cpu("250m"), milli_cpu("1.5"), milli_cpu(2)
    (250, 1500, 2000)
    """
    return _ceil_scaled(parse(q, where), 1000)


def mib(q: object, where: str = "memory", *, capacity: bool = False) -> int:
    """Memory quantity in MiB: rounded up for a request, down for a capacity.

    Examples
    --------
    >>> mib("1Gi"), mib("1G"), mib("1G", capacity=True)
    (1024, 954, 953)
    """
    return _mib(parse(q, where), capacity)


@lru_cache(maxsize=4096)
def _mib(v: Fraction, capacity: bool) -> int:
    v = v / MIB
    return math.floor(v) if capacity else math.ceil(v)


def count(q: object, where: str = "count") -> int:
    """A whole count (GPUs): the quantity must be an integer.

    Examples
    --------
    >>> count("8")
    8
    """
    v = parse(q, where)
    if v.denominator != 1:
        raise ValueError(f"{where}: expected a whole number, got {q!r}")
    return int(v)


__all__ = ["MIB", "count", "mib", "milli_cpu", "parse", "scaled"]
