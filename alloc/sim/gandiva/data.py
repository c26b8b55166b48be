r"""Per-model data of the Gandiva simulator and its interference rule.

The data file (``alloc/sim/data/gandiva_models.json``, format
``alloc.gandiva-models/1``) holds, per model set (``table1``: the eight jobs
of Gandiva's Table 1; ``table2``: the ten models of its Table 2), each
model's GPU utilisation alone $u_m$, its mini-batch rate alone
$r_m$, Table 1's best packing rate, GPU memory, suspend-resume and
migration costs (seconds) and locality factors, every number with its source
(the file's ``sources``).  A user's file in the same format may replace it.

Interference of jobs packed on one GPU (1-GPU jobs only).  A job of model
$m$ alone keeps the GPU busy a fraction $u_m$ of the time.  A
group $G$ sharing one GPU is served like processor sharing with a
packing efficiency $\eta_G$: each job runs at

$$
f_i = \eta_G \cdot \min\Big(1, \frac{1}{\sum_{k \in G} u_k}\Big)
$$

times its rate alone, with $\eta_G$ the geometric mean of its
members' $\eta_m$ (a single job: $f = 1$).  $\eta_m$ comes
from Table 1: two copies of model $m$ give a total of
$A_m = \mathrm{packing\ max} / r_m$ times the rate alone, so
$\eta_m = A_m / (2 \min(1, 1/(2 u_m)))$ where a pair can reach
$A_m$.  For VAE and SuperResolution Table 1's maximum (5.1x and 3.6x)
is beyond what two copies can give (2x): it is a maximum over more copies,
so their $\eta_m$ is the mean of the others' (0.86).  A file may give
measured pair rates instead (``pairs``: per-job factors of each pair); it
must then give every pair of the 1-GPU models it lists.

The geometric mean is checked against measured data: over Gavel's measured
co-located throughputs (``gavel_throughputs.json``, every pair of distinct
single-GPU configurations), the total of a pair, predicted as the geometric
mean of the two self-pairs' totals, is within 8 % of the measured total in
the median on P100 and K80 and 13 % on V100 (`gavel_pair_check`).

The GPU utilisation a running job adds is $n \, u_m \, f$ for
$n$ GPUs at factor $f$ (its speed over its speed alone): the
busy time that does the job's work.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import combinations_with_replacement
from pathlib import Path
from typing import Mapping, Sequence

from ...shipped import read_data_file
from ...errors import InputError

#: The shipped data file (inside the package).
DATA_FILE = "sim/data/gandiva_models.json"
FORMAT = "alloc.gandiva-models/1"


@dataclass(frozen=True)
class ModelSpec:
    """One model's data (units: fraction, mini-batches/s, MiB, seconds).

    Attributes
    ----------
    name : str
    gpu_util : float
        GPU utilisation alone, 0..1.
    rate_mbps : float
        Mini-batches per second alone (> 0).
    packing_max_mbps : float or None
        Table 1's best total rate of copies packed on one GPU.
    gpus : tuple of int
        GPU counts a job of this model may ask for (drawn equally likely).
    gpu_mem_mib : int
        Peak GPU memory of one job (per GPU).
    suspend_resume_s, migrate_s : float
        Seconds without progress after a resume, after a migration.
    spread : mapping of int to float
        Rate factor on k servers (1 on one server; keys: 2, 4).
    """
    name: str
    gpu_util: float
    rate_mbps: float
    packing_max_mbps: float | None
    gpus: tuple[int, ...]
    gpu_mem_mib: int
    suspend_resume_s: float
    migrate_s: float
    spread: Mapping[int, float] = field(default_factory=dict)

    def spread_factor(self, servers: int, least: int = 1) -> float:
        """Rate factor of a job on ``servers`` servers, relative to its
        tightest placement on ``least`` servers (step function of the keys)."""
        def f(k: int) -> float:
            keys = [x for x in self.spread if x <= k]
            return self.spread[max(keys)] if keys and k > 1 else 1.0
        return f(servers) / f(least)


@dataclass(frozen=True)
class ModelSet:
    """A model set of the data file: models, the mix and pair rates.

    Attributes
    ----------
    name : str
    models : mapping of str to ModelSpec
    groups : tuple of (tuple of str, float)
        The mix: groups of models and each group's probability.
    pairs : mapping of frozenset to mapping of str to float, optional
        Measured per-job rate factors of packed pairs (empty: the rule).
    eta : mapping of str to float
        Packing efficiency per model (the rule's $\\eta_m$).
    """
    name: str
    models: Mapping[str, ModelSpec]
    groups: tuple[tuple[tuple[str, ...], float], ...]
    pairs: Mapping[frozenset, Mapping[str, float]] = field(default_factory=dict)
    eta: Mapping[str, float] = field(default_factory=dict)

    def factors(self, models: Sequence[str]) -> list[float]:
        """Each packed job's rate over its rate alone (see the module notes)."""
        if len(models) == 1:
            return [1.0]
        key = frozenset(models)
        if self.pairs and len(models) == 2:
            got = self.pairs[key]
            if len(key) == 1:
                return [got[models[0]]] * 2
            return [got[m] for m in models]
        eta = math.exp(sum(math.log(self.eta[m]) for m in models) / len(models))
        load = sum(self.models[m].gpu_util for m in models)
        return [eta * min(1.0, 1.0 / load)] * len(models)


def _where(source: str, path: str) -> str:
    return f"{source}: {path}" if source else path


def _num(doc: Mapping, key: str, where: str, lo: float, hi: float = math.inf,
         strict_lo: bool = False, optional: bool = False):
    v = doc.get(key)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or v < lo or v > hi or (strict_lo and v <= lo):
        rng = f"{'>' if strict_lo else '>='} {lo:g}" + (f" and <= {hi:g}" if hi < math.inf else "")
        raise InputError(f"{where}.{key}: expected a number {rng}, got {v!r}")
    return float(v)


def _model(name: str, doc, where: str) -> ModelSpec:
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: expected an object, got {doc!r:.60}")
    gpus = doc.get("gpus", [1])
    if not isinstance(gpus, list) or not gpus or not all(
            isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in gpus):
        raise InputError(f"{where}.gpus: expected a non-empty list of integers >= 1, got {gpus!r}")
    spread = doc.get("spread", {})
    if not isinstance(spread, Mapping) or not all(
            str(k).isdigit() and int(k) >= 2 for k in spread):
        raise InputError(f"{where}.spread: expected an object keyed by server counts >= 2")
    sp = {int(k): _num(spread, k, f"{where}.spread", 0.0, 1.0, strict_lo=True) for k in spread}
    mem = doc.get("gpu_mem_mib")
    if isinstance(mem, bool) or not isinstance(mem, int) or mem < 0:
        raise InputError(f"{where}.gpu_mem_mib: expected an integer >= 0, got {mem!r}")
    return ModelSpec(name, _num(doc, "gpu_util", where, 0.0, 1.0, strict_lo=True),
                     _num(doc, "rate_mbps", where, 0.0, strict_lo=True),
                     _num(doc, "packing_max_mbps", where, 0.0, strict_lo=True, optional=True),
                     tuple(gpus), mem, _num(doc, "suspend_resume_s", where, 0.0),
                     _num(doc, "migrate_s", where, 0.0), sp)


def _groups(doc, models: Mapping[str, ModelSpec], where: str):
    groups = doc.get("groups")
    if not isinstance(groups, list) or not groups:
        raise InputError(f"{where}.groups: expected a non-empty list")
    out = []
    for k, g in enumerate(groups):
        w = f"{where}.groups[{k}]"
        ms = g.get("models") if isinstance(g, Mapping) else None
        if not isinstance(ms, list) or not ms:
            raise InputError(f"{w}.models: expected a non-empty list of model names")
        for m in ms:
            if m not in models:
                raise InputError(f"{w}.models: unknown model {m!r}; expected one of "
                                 f"{', '.join(models)}")
        out.append((tuple(ms), _num(g, "p", w, 0.0, 1.0)))
    if abs(sum(p for _, p in out) - 1.0) > 1e-6:
        raise InputError(f"{where}.groups: probabilities sum to {sum(p for _, p in out):g}, "
                         f"expected 1")
    return tuple(out)


def eta_from_table(models: Mapping[str, ModelSpec]) -> dict[str, float]:
    """Each model's packing efficiency $\\eta_m$ (see the module notes);
    empty when no model has a packing rate a pair can reach."""
    got, rest = {}, []
    for m, spec in models.items():
        if spec.packing_max_mbps is None:
            rest.append(m)
            continue
        total = spec.packing_max_mbps / spec.rate_mbps
        reach = 2.0 * min(1.0, 1.0 / (2.0 * spec.gpu_util))
        if total <= reach:
            got[m] = total / reach
        else:
            rest.append(m)
    if not got:
        return {}
    mean = sum(got.values()) / len(got)
    return {**got, **{m: mean for m in rest}}


def _pairs(doc, models: Mapping[str, ModelSpec], where: str) -> dict:
    pairs = doc.get("pairs")
    if pairs is None:
        return {}
    if not isinstance(pairs, list):
        raise InputError(f"{where}.pairs: expected a list of {{models, rates}} objects")
    out: dict = {}
    for k, p in enumerate(pairs):
        w = f"{where}.pairs[{k}]"
        ms, rates = (p.get("models"), p.get("rates")) if isinstance(p, Mapping) else (None, None)
        if not isinstance(ms, list) or len(ms) != 2 or any(m not in models for m in ms):
            raise InputError(f"{w}.models: expected two model names of the set, got {ms!r}")
        if not isinstance(rates, list) or len(rates) != 2 or not all(
                isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r)
                and r > 0 for r in rates):
            raise InputError(f"{w}.rates: expected two numbers > 0 (each job's rate over its "
                             f"rate alone), got {rates!r}")
        out[frozenset(ms)] = dict(zip(ms, map(float, rates)))
    single = sorted(m for m, s in models.items() if 1 in s.gpus)
    for a, b in combinations_with_replacement(single, 2):
        if frozenset((a, b)) not in out:
            raise InputError(f"{where}.pairs: no throughput for the pair ({a!r}, {b!r})")
    return out


def load_models(path: str | Path | None = None, table: str = "table1") -> ModelSet:
    """A model set of the data file (default: the shipped one).

    Raises
    ------
    InputError
        One line naming the file, the field and what was expected.
    """
    source = str(path) if path is not None else ""
    doc = read_data_file(path, DATA_FILE, FORMAT)
    sec = doc.get(table)
    if not isinstance(sec, Mapping):
        raise InputError(_where(source, f"{table}: no such model set; expected one of "
                                f"{', '.join(k for k in doc if isinstance(doc[k], Mapping) and 'models' in doc[k])}"))
    raw = sec.get("models")
    if not isinstance(raw, Mapping) or not raw:
        raise InputError(_where(source, f"{table}.models: expected an object of models"))
    models = {m: _model(m, d, _where(source, f"{table}.models.{m}")) for m, d in raw.items()}
    groups = _groups(sec, models, _where(source, table))
    pairs = _pairs(sec, models, _where(source, table))
    return ModelSet(table, models, groups, pairs, eta_from_table(models))


def gavel_pair_check(path: str | Path | None = None) -> dict[str, dict[str, float]]:
    r"""How well the geometric-mean rule predicts Gavel's measured pairs.

    For each GPU type of Gavel's throughputs and each pair of distinct
    single-GPU configurations a, b measured together, the pair's total
    normalised rate $A_{ab}$ (each job's rate over its rate alone, summed)
    is predicted as $\sqrt{A_{aa} A_{bb}}$.

    Returns
    -------
    dict
        Per type: ``pairs`` (count), ``median`` and ``mean`` relative error.
    """
    from ..gavel import throughputs_path
    doc = json.loads(Path(path or throughputs_path()).read_text())
    out = {}
    for t in ("k80", "p100", "v100"):
        v = doc[t]
        names = [k for k in v if k.endswith(", 1)")]
        agg = {(a, b): v[a][b][0] / v[a]["null"] + v[a][b][1] / v[b]["null"]
               for a in names for b in names if b in v[a]}
        errs = [abs(math.sqrt(agg[(a, a)] * agg[(b, b)]) - x) / x
                for (a, b), x in agg.items()
                if a != b and x > 0 and agg.get((a, a), 0) > 0 and agg.get((b, b), 0) > 0]
        errs.sort()
        out[t] = {"pairs": len(errs), "median": errs[len(errs) // 2] if errs else 0.0,
                  "mean": sum(errs) / len(errs) if errs else 0.0}
    return out


def gpu_memory(path: str | Path | None = None) -> dict[str, int]:
    """GPU memory per GPU type (MiB) from the data file."""
    doc = read_data_file(path, DATA_FILE, FORMAT)
    return {t: int(v["value"]) for t, v in doc["gpu_mem_capacity_mib"].items()}


__all__ = ["DATA_FILE", "FORMAT", "ModelSet", "ModelSpec", "eta_from_table", "gavel_pair_check",
           "gpu_memory", "load_models"]
