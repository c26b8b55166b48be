"""Random inputs for the fuzz campaign: instances over every feature the
format has, ``alloc.shares/1`` problems, and mutations of both into
malformed files.

Instances are built as ``alloc.instance/1`` documents (so that the same
document can be mutated into a malformed file) and validated by
[alloc.io.instance_from_dict][]: a draw the validation refuses is drawn
again.  Features, each drawn independently:

* levels: ``server > gpu`` up to ``rack > server > socket > switch > gpu``;
  servers of 0 (CPU-only) to 16 GPUs of three types;
* jobs: whole-GPU (1 to 16 GPUs), shared (one GPU, 100 to 900 milli),
  CPU-only, elastic (``min_gpus`` / ``max_gpus``), with or without a profile
  of ``models/`` (their grids make other CPU/memory points), locality at any
  level, allowed GPU types, weights and priorities, zero CPU or memory;
* tenants with cells at the server, socket or GPU level, guaranteed and
  opportunistic jobs;
* GPU memory and compute: servers declaring their GPUs' memory; in a third
  of the instances, jobs declaring ``gpu_mem``, ``gpu_mem_min`` and
  ``gpu_compute``;
* running jobs: a subset placed first by a heuristic (``current``; AntMan's
  opportunistic and capped shares among them);
* extreme values: capacities and requests near the schema's limits, weights
  from 1e-3 to 1e3.

A quarter of the instances are medium-sized (up to 24 servers and 40 jobs),
the rest small (up to 6 servers and 12 jobs).  Tiny instances (at most
three servers of at most eight GPUs, five jobs, every multi-GPU job inside
one server, elastic ones at most one GPU above their request) are small
enough for [alloc.experiments.fuzz.brute.brute_force][].
"""
from __future__ import annotations

import copy
import json
import random
from typing import Any

from ...errors import InputError
from ...io import instance_from_dict, placement_to_dict

GPU_TYPES = ("V100", "P100", "K80")
LEVELS = (("server", "gpu"), ("rack", "server", "gpu"), ("rack", "server", "socket", "gpu"),
          ("rack", "server", "socket", "switch", "gpu"), ("server", "socket", "switch", "gpu"))
#: GPU memory of a server's GPUs (MiB) when it declares its own
GPU_MEM = (4096, 8192, 16384, 24576, 32768, 81920)
MODELS = ("res18", "res50", "bert", "alexnet", "gnmt", "lstm", "m5", "mobilenet", "shufflenet",
          "transformer", "vae", "deepspeech")


def server_doc(rng: random.Random, i: int, levels, tiny: bool, extreme: bool) -> dict:
    """One server: capacities, GPUs and their shape under ``levels``."""
    g = rng.choice((1, 2, 4, 8) if tiny else (0, 1, 2, 4, 8, 8, 16))
    cpu = rng.choice((2000, 4000, 8000, 16000, 24000, 48000, 96000))
    mem = rng.choice((8000, 16000, 64000, 256000, 1024000))
    if extreme and rng.random() < 0.3:
        cpu, mem = rng.choice(((10 ** 9, 10 ** 9), (1, 1), (0, 0)))
    s: dict[str, Any] = {"id": f"s{i:02d}", "cpu": cpu, "mem": mem}
    if g:
        s.update(gpus=g, gpu_type=rng.choice(GPU_TYPES))
        if not tiny and rng.random() < 0.15:
            s["gpu_mem"] = rng.choice(GPU_MEM)
    if "rack" in levels:
        s["rack"] = f"r{rng.randint(0, 1)}"
    if g >= 2 and "socket" in levels:
        s["sockets"] = rng.choice([k for k in (1, 2) if g % k == 0])
        if "switch" in levels:
            per = g // s["sockets"]
            s["switches_per_socket"] = rng.choice([k for k in (1, 2) if per % k == 0])
    return s


def tenants_doc(rng: random.Random, servers, levels) -> dict:
    """One or two tenants with a few cells of the cluster's GPU types."""
    types = sorted({s["gpu_type"] for s in servers if s.get("gpus")})
    if not types:
        return {}
    cell_levels = [lv for lv in ("server", "socket", "gpu") if lv in levels]
    out = {}
    for v in range(rng.randint(1, 2)):
        cells = [{"level": rng.choice(cell_levels), "gpu_type": rng.choice(types),
                  "count": rng.randint(1, 2)} for _ in range(rng.randint(1, 2))]
        out[f"vc{v}"] = {"cells": cells}
    return out


def job_doc(rng: random.Random, k: int, levels, tenants, tiny: bool, extreme: bool,
            demands: bool = False) -> dict:
    """One pending job of a random kind (module notes); GPU memory and compute
    declared only with ``demands``."""
    kind = rng.choice(("whole", "whole", "share", "cpu", "elastic"))
    j: dict = {"id": f"j{k}"}
    g, milli = 0, 1000
    if kind == "share":
        g, milli = 1, rng.choice((100, 250, 500, 700, 900))
        j.update(gpus=1, gpu_milli=milli)
    elif kind != "cpu":
        g = rng.choice((1, 2, 2, 4) if tiny else (1, 2, 2, 4, 8, 16))
        j["gpus"] = g
        if kind == "elastic" and g >= 2:
            j["min_gpus"] = rng.randint(1, g)
            j["max_gpus"] = rng.choice((g, 2 * g) if not tiny else (g, g + 1))
    else:
        j["gpus"] = 0
    per = max(g, 1)
    j["cpu"] = per * rng.choice((0, 500, 1000, 2000, 3000, 6000))
    j["mem"] = per * rng.choice((0, 1000, 8000, 16000, 64000))
    if extreme and rng.random() < 0.2:
        j["cpu"], j["mem"] = rng.choice(((10 ** 8, 10 ** 8), (1, 1)))
    if g > 1 and milli == 1000:
        if tiny:
            j["locality"] = "server"
        elif rng.random() < 0.5:
            j["locality"] = rng.choice([lv for lv in levels if lv != "gpu"])
    if g and rng.random() < 0.3:
        j["gpu_types"] = sorted(rng.sample(GPU_TYPES, rng.randint(1, 2)))
    if g and demands and rng.random() < 0.5:
        gpu_demand(rng, j)
    if rng.random() < 0.5:
        j["model"] = rng.choice(MODELS)
    j["weight"] = rng.choice((1.0, 1.0, 0.5, 2.0, 3.7) + ((1e-3, 1e3) if extreme else ()))
    j["priority"] = rng.choice((0, 0, 1, 5))
    if tenants and rng.random() < 0.6:
        j["tenant"] = rng.choice(sorted(tenants))
        j["guaranteed"] = rng.random() < 0.6
    return j


def gpu_demand(rng: random.Random, j: dict) -> None:
    """GPU memory and compute for job ``j`` (`alloc.resources`): memory, often
    with a least memory a capped share runs with, and often a compute share
    (both make a job that may ride on others' GPUs)."""
    j["gpu_mem"] = rng.choice((0, 512, 2048, 6000, 12000, 16384, 30000, 40000))
    if rng.random() < 0.6:
        j["gpu_mem_min"] = rng.randint(0, j["gpu_mem"])
    if rng.random() < 0.7:
        j["gpu_compute"] = rng.choice((1, 100, 300, 500, 900, 1000))


def instance_doc(rng: random.Random, *, tiny: bool = False, name: str = "fuzz") -> dict:
    """A random instance document without running jobs (module notes)."""
    extreme = not tiny and rng.random() < 0.1
    medium = not tiny and rng.random() < 0.25
    levels = ("server", "gpu") if tiny else rng.choice(LEVELS)
    servers = [server_doc(rng, i, levels, tiny, extreme)
               for i in range(rng.randint(1, 3 if tiny else (24 if medium else 6)))]
    tenants = tenants_doc(rng, servers, levels) if not tiny and rng.random() < 0.35 else {}
    doc: dict[str, Any] = {"format": "alloc.instance/1", "name": name,
                           "cluster": {"levels": list(levels), "servers": servers}, "jobs": []}
    if tenants:
        doc["tenants"] = tenants
    demands = not tiny and rng.random() < 0.3
    for k in range(rng.randint(1, 5 if tiny else (40 if medium else 12))):
        for _ in range(5):             # a job the validation refuses is drawn again
            j = job_doc(rng, k, levels, tenants, tiny, extreme, demands)
            try:
                instance_from_dict({**doc, "jobs": doc["jobs"] + [j]})
            except InputError:
                continue
            doc["jobs"].append(j)
            break
    return doc


def valid_instance(rng: random.Random, *, tiny: bool = False, running: bool = True,
                   name: str = "fuzz"):
    """``(doc, instance)``: a valid random instance, some of its jobs running
    (placed by ``best-fit``, or ``hived`` with tenants or elastic jobs)."""
    for _ in range(50):
        doc = instance_doc(rng, tiny=tiny, name=name)
        if not doc["jobs"]:
            continue
        try:
            inst = instance_from_dict(doc)
        except InputError:
            doc.pop("tenants", None)          # cells that do not fit the cluster
            for j in doc["jobs"]:
                j.pop("tenant", None)
                j.pop("guaranteed", None)
            try:
                inst = instance_from_dict(doc)
            except InputError:
                continue
        if running and not tiny and rng.random() < 0.5:
            doc, inst = with_running(rng, doc, inst)
        return doc, inst
    raise RuntimeError("no valid instance drawn in 50 tries")


#: heuristics that place the running jobs: antman gives opportunistic shares
#: (milli 0) and capped memory and compute, gandiva spread and elastic jobs
PLACERS = ("best-fit", "hived", "antman", "gandiva")


def with_running(rng: random.Random, doc: dict, inst):
    """The instance with a random subset of its jobs running where a
    heuristic whose capabilities cover them (`PLACERS`) places them."""
    from ...registry import solvers
    from ...resources import can_ride
    from ...solve import allocate, needed_capabilities
    picked = [j for j in inst.jobs if rng.random() < 0.5]
    if not picked:
        return doc, inst
    need = needed_capabilities(inst.cluster, picked)
    reg = solvers()
    fit = [n for n in PLACERS if need <= reg[n].capabilities] or ["hived"]
    ride = "antman" in fit and any(can_ride(j) for j in picked)
    solver = "antman" if ride and rng.random() < 0.7 else rng.choice(fit)
    try:
        a = allocate(inst.cluster, picked, solver=solver, time_limit=5)
    except InputError:
        return doc, inst
    placed = {p.job: p for p in a.placements}
    doc = copy.deepcopy(doc)
    for j in doc["jobs"]:
        if j["id"] in placed:
            j["current"] = placement_to_dict(placed[j["id"]], with_job=False)
    try:
        return doc, instance_from_dict(doc)
    except InputError:
        return doc, inst


# ------------------------------------------------------------------ shares
def shares_doc(rng: random.Random, *, pairs: bool = True) -> dict:
    """A random ``alloc.shares/1`` problem (Gavel's format)."""
    types = rng.sample(("v100", "p100", "k80", "a100"), rng.randint(1, 3))
    doc: dict[str, Any] = {"format": "alloc.shares/1",
                           "gpu_types": {t: rng.choice((0, 1, 2, 4, 8, 32)) for t in types},
                           "jobs": []}
    if not any(doc["gpu_types"].values()):
        doc["gpu_types"][types[0]] = 4
    for i in range(rng.randint(1, 8)):
        j: dict[str, Any] = {
            "id": f"j{i}", "scale_factor": rng.choice((1, 1, 2, 4)),
            "throughput": {t: rng.choice((0.0, 0.5, 1.0, 2.7, 10.0, 1e-6)) for t in types},
            "steps_remaining": rng.choice((100.0, 1e4, 1e6)),
            "elapsed_s": rng.choice((0.0, 50.0)), "isolated_time_s": rng.choice((0.0, 20.0))}
        if not any(j["throughput"].values()):
            j["throughput"][types[0]] = 1.0
        if rng.random() < 0.3:
            j["weight"] = rng.choice((0.5, 2.0, 1e-3))
        doc["jobs"].append(j)
    if pairs and len(doc["jobs"]) >= 2 and rng.random() < 0.3:
        a, b = rng.sample(doc["jobs"], 2)
        if a["scale_factor"] == b["scale_factor"]:
            doc["pairs"] = [{"jobs": [a["id"], b["id"]],
                             "throughput": {types[0]: [rng.uniform(0.1, 2), rng.uniform(0.1, 2)]}}]
    return doc


# ------------------------------------------------------------------ mutation
ODD_VALUES: tuple[Any, ...] = (None, -1, 0, 1e300, -1e300, "x", "٥٠٠", "1_000", [], {}, True, 2 ** 63, 0.5,
              float("nan"), float("inf"), "", "\u0000", "s00/gpu99")


def mutate(rng: random.Random, doc):
    """A copy of a JSON document with one random change: a value replaced by
    an odd one, a key deleted, an unknown key added or a list emptied."""
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    if not paths:
        return doc
    parent, key = rng.choice(paths)
    op = rng.choice(("value", "value", "delete", "add", "empty"))
    if op == "value":
        parent[key] = rng.choice(ODD_VALUES)
    elif op == "delete" and isinstance(parent, dict):
        del parent[key]
    elif op == "add" and isinstance(parent, dict):
        parent["colour"] = "red"
    elif isinstance(parent[key], (list, dict)):
        parent[key] = type(parent[key])()
    return doc


def _paths(doc):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield doc, k
            yield from _paths(v)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield doc, i
            yield from _paths(v)


def dumps(doc) -> str:
    """The document as JSON text (NaN and infinities written as JSON cannot)."""
    return json.dumps(doc, allow_nan=True)


CSV_ODD = ("", "-1", "٥٠٠", "1_000", "1e3", "9" * 30, "abc", "1.5", " 7 ", "\u00a0", "0x10")


def mutate_csv(rng: random.Random, text: str) -> str:
    """A copy of a CSV file with one random change: a cell replaced by an odd
    value, a row cut short or duplicated, or the header changed."""
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    cells = lines[i].split(",")
    op = rng.choice(("cell", "cell", "short", "dup", "header"))
    if op == "cell":
        cells[rng.randrange(len(cells))] = rng.choice(CSV_ODD)
        lines[i] = ",".join(cells)
    elif op == "short":
        lines[i] = ",".join(cells[:max(1, len(cells) // 2)])
    elif op == "dup":
        lines.insert(i, lines[i])
    else:
        lines[0] = lines[0].replace(rng.choice(lines[0].split(",")), "bogus", 1)
    return "\n".join(lines) + "\n"


__all__ = ["GPU_TYPES", "LEVELS", "MODELS", "dumps", "instance_doc", "mutate", "mutate_csv",
           "shares_doc", "valid_instance", "with_running"]
