"""Reading Slurm and acting on it through ``scontrol``: nodes, jobs with the
GPU indices Slurm bound, the switch tree, and the commands the placement
controller runs (each timed, so that Slurm's own latency is measured apart).

Parsed forms (``scontrol ... --oneliner``: one record a line, ``Key=Value``
fields):

* ``scontrol show nodes``: ``NodeName``, ``CPUTot``, ``RealMemory`` (MiB),
  ``Gres=gpu:TYPE:N`` (or ``gpu:N``), ``State`` (``IDLE``, ``MIXED+DRAIN``,
  ``DOWN*``...);
* ``scontrol show job -d``: ``JobId``, ``JobState``, ``Reason``,
  ``NumNodes``, ``NumCPUs``, ``TRES`` (its ``mem=`` is the job's memory over
  all its nodes), ``TresPerNode=gres:gpu[:TYPE]:N``, ``SubmitTime``,
  ``ReqNodeList``, ``NodeList`` and, per allocated node set,
  ``Nodes=... GRES=gpu:TYPE:N(IDX:0-1,4)``;
* ``topology.conf``: ``SwitchName=S Nodes=...`` lines (leaf switches).

Node lists use Slurm's host-list syntax (``gpu[001-004,007],login1``);
[hostnames][alloc.adapters.scontrol.hostnames] expands it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Reasons of a pending job that mean "held": the job is the controller's to place.
HELD = ("JobHeldUser", "JobHeldAdmin", "job_requeued_in_held_state")
#: Job states in which a job holds resources.
ACTIVE = ("RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED")


class SlurmError(Exception):
    """A Slurm command failed (one line: the command and Slurm's message)."""


@dataclass(frozen=True)
class Node:
    """A Slurm node: CPUs, memory (MiB), GPUs of one type, state flags."""
    name: str
    cpus: int
    memory: int
    gpus: int
    gpu_type: str | None
    state: frozenset

    @property
    def closed(self) -> bool:
        """Drained, draining, down or failed: no new work."""
        return bool(self.state & {"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING",
                                  "NOT_RESPONDING", "MAINTENANCE", "REBOOT_REQUESTED"})


@dataclass(frozen=True)
class SlurmJob:
    """A Slurm job as the controller sees it.

    ``gpus_per_node`` and ``gpu_type`` come from ``TresPerNode``; ``cpus`` and
    ``memory`` are totals over its nodes (milli-cores are ``1000 * cpus``);
    ``bound`` maps each allocated node to the GPU indices Slurm bound there.
    """
    id: int
    state: str
    reason: str
    nodes: int
    cpus: int
    memory: int
    gpus_per_node: int
    gpu_type: str | None
    submit: str = ""
    node_list: tuple = ()
    bound: dict = field(default_factory=dict)
    req_nodes: tuple = ()

    @property
    def held(self) -> bool:
        """Pending and held: the controller's to place."""
        return self.state == "PENDING" and self.reason in HELD

    @property
    def active(self) -> bool:
        """Holding resources on its nodes."""
        return self.state in ACTIVE


# ------------------------------------------------------------------- parsing
_FIELD = re.compile(r"(\S+?)=(\S*)")


def fields(line: str) -> dict[str, str]:
    """The ``Key=Value`` fields of one ``--oneliner`` record (first one wins)."""
    out: dict[str, str] = {}
    for k, v in _FIELD.findall(line):
        out.setdefault(k, v)
    return out


def hostnames(expr: str) -> list[str]:
    """Expand a Slurm host list (``gpu[001-003,007],login1``)."""
    if not expr or expr == "(null)":
        return []
    out, depth, cur = [], 0, ""
    for ch in expr + ",":
        if ch == "," and depth == 0:
            if cur:
                out.extend(_expand(cur))
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    return out


def _expand(item: str) -> list[str]:
    m = re.match(r"^(.*?)\[([^\]]+)\](.*)$", item)
    if not m:
        return [item]
    head, ranges, tail = m.groups()
    out = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        width = len(lo)
        for k in range(int(lo), int(hi or lo) + 1):
            out.extend(_expand(f"{head}{k:0{width}d}{tail}"))
    return out


def indices(text: str) -> list[int]:
    """GPU indices of an ``IDX:`` list (``0-1,4``)."""
    out: list[int] = []
    for part in text.split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _gres(text: str) -> tuple[int, str | None]:
    """(GPUs, type) of a ``gpu:TYPE:N`` / ``gres:gpu:N`` / ``gres/gpu=N`` spec list."""
    for item in text.split(","):
        item = item.split("(", 1)[0]
        parts = item.split(":")
        if parts and parts[0] == "gres":
            parts = parts[1:]
        if parts and parts[0] == "gpu" and len(parts) >= 2:
            n = parts[-1]
            if n.isdigit():
                return int(n), parts[1] if len(parts) == 3 else None
    return 0, None


def _mib(text: str) -> int:
    m = re.match(r"^(\d+(?:\.\d+)?)([KMGT]?)$", text)
    if not m:
        return 0
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 ** 2}[m.group(2)]
    return int(float(m.group(1)) * scale)


def parse_nodes(text: str) -> list[Node]:
    """Nodes of ``scontrol show nodes --oneliner``."""
    out = []
    for line in text.splitlines():
        f = fields(line)
        if "NodeName" not in f:
            continue
        gpus, gtype = _gres(f.get("Gres", ""))
        state = frozenset(s.rstrip("*~#!%$@^-") for s in re.split(r"[+]", f.get("State", "")))
        out.append(Node(f["NodeName"], int(f.get("CPUTot", 0) or 0),
                        int(f.get("RealMemory", 0) or 0), gpus, gtype, state))
    return out


def parse_jobs(text: str) -> list[SlurmJob]:
    """Jobs of ``scontrol show job -d --oneliner`` (with their bound GPU indices)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("JobId="):
            continue
        f = fields(line)
        bound: dict[str, list[int]] = {}
        for seg in re.split(r"\s(?=Nodes=)", line)[1:]:
            nodes = seg.split(None, 1)[0][len("Nodes="):]
            idx = re.search(r"\sGRES=\S*?IDX:([0-9,\-]+)", seg)
            for n in hostnames(nodes):
                bound[n] = indices(idx.group(1)) if idx else []
        gpn, gtype = _gres(f.get("TresPerNode", ""))
        tres = dict(kv.split("=", 1) for kv in f.get("TRES", "").split(",") if "=" in kv)
        lo = f.get("NumNodes", "1").split("-")[0]
        out.append(SlurmJob(
            int(f["JobId"]), f.get("JobState", ""), f.get("Reason", ""),
            int(lo) if lo.isdigit() else 1, int(f.get("NumCPUs", "0") or 0),
            _mib(tres.get("mem", "0")), gpn, gtype, f.get("SubmitTime", ""),
            tuple(hostnames(f.get("NodeList", ""))), bound,
            tuple(hostnames(f.get("ReqNodeList", "")))))
    return out


def parse_topology(text: str) -> dict[str, str]:
    """``{node: leaf switch}`` of a ``topology.conf`` (switches listing nodes)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        f = fields(line)
        if "SwitchName" in f and "Nodes" in f:
            for n in hostnames(f["Nodes"]):
                out.setdefault(n, f["SwitchName"])
    return out


# ------------------------------------------------------------------ commands
class Scontrol:
    """Runs Slurm's commands for one cluster (``SLURM_CONF``), timing each.

    Parameters
    ----------
    conf : path, optional
        ``slurm.conf`` (default: ``$SLURM_CONF``, else Slurm's own default).
    timeout : float
        Seconds per command.
    """

    def __init__(self, conf=None, timeout: float = 30.0):
        self.env = dict(os.environ)
        if conf is not None:
            self.env["SLURM_CONF"] = str(conf)
        self.timeout = timeout
        #: seconds spent in Slurm's commands (reset by the caller)
        self.spent = 0.0
        self.calls = 0

    @property
    def conf(self) -> Path | None:
        """The ``slurm.conf`` in use, if known."""
        c = self.env.get("SLURM_CONF")
        return Path(c) if c else None

    def run(self, *args: str) -> str:
        """``scontrol args...``'s output; `SlurmError` (one line) when it fails."""
        exe = shutil.which("scontrol")
        if exe is None:
            raise SlurmError("scontrol is not installed (apt-get install -y slurm-client)")
        t0 = time.perf_counter()
        try:
            out = subprocess.run([exe, *args], env=self.env, capture_output=True, text=True,
                                 timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"scontrol {' '.join(args)}: no answer in {self.timeout:.0f} s") from None
        finally:
            self.spent += time.perf_counter() - t0
            self.calls += 1
        if out.returncode:
            msg = (out.stderr or out.stdout).strip().splitlines()
            raise SlurmError(f"scontrol {' '.join(args)}: "
                             f"{msg[0] if msg else f'exit {out.returncode}'}")
        return out.stdout

    def nodes(self) -> list[Node]:
        """The cluster's nodes."""
        return parse_nodes(self.run("show", "nodes", "--oneliner"))

    def jobs(self) -> list[SlurmJob]:
        """Every job Slurm knows (with bound GPU indices)."""
        text = self.run("show", "job", "-d", "--oneliner")
        return [] if text.startswith("No jobs") else parse_jobs(text)

    def topology(self, path=None) -> dict[str, str]:
        """``{node: leaf switch}`` from ``topology.conf`` next to ``slurm.conf``
        (or ``path``); empty when there is none."""
        p = Path(path) if path else (self.conf.parent / "topology.conf" if self.conf else None)
        if p is None or not p.exists():
            return {}
        return parse_topology(p.read_text())

    # the controller's actions
    def start(self, job: int, nodes: list[str]) -> None:
        """Place a held job on ``nodes`` and release it."""
        self.run("update", f"JobId={job}", f"ReqNodeList={','.join(nodes)}",
                 f"NumNodes={len(nodes)}", "StartTime=now")
        self.run("release", str(job))

    def requeue(self, job: int) -> None:
        """Stop a running job and put it back in the queue, held."""
        self.run("requeuehold", str(job))

    def hold(self, job: int) -> None:
        """Hold a pending job again."""
        self.run("hold", str(job))


__all__ = ["ACTIVE", "HELD", "Node", "Scontrol", "SlurmError", "SlurmJob", "fields",
           "hostnames", "indices", "parse_jobs", "parse_nodes", "parse_topology"]
