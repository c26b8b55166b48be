r"""A placement controller for a real Slurm: alloc decides where held jobs run.

Deployment.  The controller runs next to ``slurmctld`` (any host whose
``scontrol`` reaches it, ``SLURM_CONF``).  Jobs are submitted *held*
(``sbatch --hold``, or a ``job_submit`` plugin that holds them): a held job
is the controller's to place.  Jobs Slurm started by itself are running jobs
alloc places around.

The cluster.  One server per node of ``scontrol show nodes``: CPUs
(``CPUTot``, as milli-cores), ``RealMemory`` (MiB), ``Gres=gpu:TYPE:N`` (GPU
``k`` of node ``n`` is ``n/gpu<k>``, ``k`` Slurm's GRES index); the leaf
switches of ``topology.conf`` become the ``rack`` level (a node outside every
switch is its own rack).  A node Slurm drains (or that is down) is drained in
the session: nothing new starts there, its jobs stay until they end.

The jobs (``scontrol show job -d``).  A job of ``N`` nodes asking
``--gres=gpu[:TYPE]:k`` is one gang of ``N * k`` GPUs (type ``TYPE``), its
CPUs (``NumCPUs``) and memory (the ``mem`` of its ``TRES``) in total; one
node: all on one server.  A job of ``N > 1`` nodes takes whole nodes
(``k`` = the nodes' GPUs; others are left held, with one line saying why):
it is spread, and started when alloc gives it ``N`` whole nodes -- Slurm's
GRES count is per node, so a spread over partly free nodes waits, out of the
next round so that the others use the room meanwhile.  A running job's
``current`` is what Slurm bound: its nodes and the GPU indices of
``GRES=gpu:TYPE:k(IDX:...)``.

Each cycle (``cycle``):

1. read the nodes and the jobs (two ``scontrol`` calls);
2. bring the [Session][alloc.session.Session] up to date: new nodes added,
   drained ones drained, new held jobs submitted (Slurm's integer job ids are
   the session's ids), ended jobs finished, then one
   [reconcile][alloc.session.Session.reconcile] with what runs (the GPUs
   Slurm bound; jobs released and not started yet where alloc put them);
   the order (``fifo``: submission; ``las``: least GPU-seconds attained
   while this controller watched, counted in steps of ``las_quantum``, then
   submission -- the discretised LAS of Tiresias, which keeps a job from
   being stopped for one that has run a few seconds less);
3. one round (``Session.step``), preemption by order unless ``preempt`` is
   ``"never"``;
4. act: a preempted job is requeued held (``scontrol requeuehold``; one
   released but not started yet is held again), a moved
   one too (then started on its new nodes once Slurm has it back), a started
   one gets ``ReqNodeList`` (the nodes alloc chose), ``NumNodes`` and
   ``StartTime=now`` and is released.  One JSON line per action goes to the
   decisions file: ``{"cycle": n, "action": "start"|"preempt"|"move",
   "job": id, "nodes": [...], "gpus": {node: count}}``.

Failures.  A failed ``scontrol`` call is reported on one line and the cycle
goes on; nothing is lost: the next cycle reads Slurm again and reconciles,
so a start that did not happen is placed again and a preemption that did not
happen is decided again.  A released job Slurm has not started within
``start_timeout`` seconds is held again and placed anew.  A cycle that cannot
read Slurm changes nothing.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ..gpukey import GpuKey, gpu_key, server_of
from ..errors import InputError
from ..model import DEFAULT_GPU_TYPE, Cluster, Job, Server
from .scontrol import Node, Scontrol, SlurmError, SlurmJob

if TYPE_CHECKING:
    from ..session import Session

ORDERS = ("fifo", "las")


@dataclass(frozen=True)
class Cycle:
    """What one cycle did: job ids started, preempted, moved, left waiting;
    errors (one line each); wall time, Slurm's share of it (its commands) and
    alloc's (the rest)."""
    number: int
    started: tuple = ()
    preempted: tuple = ()
    moved: tuple = ()
    waiting: tuple = ()
    errors: tuple = ()
    wall_s: float = 0.0
    slurm_s: float = 0.0
    slurm_calls: int = 0
    round_s: float = 0.0

    @property
    def alloc_s(self) -> float:
        """Seconds outside Slurm's commands."""
        return self.wall_s - self.slurm_s


@dataclass
class _Track:
    """The controller's memory of Slurm between cycles."""
    flight: dict = field(default_factory=dict)    # released, not running yet: id -> time
    moving: dict = field(default_factory=dict)    # requeued to move: id -> nodes
    service: dict = field(default_factory=dict)   # GPU-seconds while running
    submit: dict = field(default_factory=dict)    # id -> (submit time, id)
    shape: dict = field(default_factory=dict)     # id -> the job as submitted
    refused: set = field(default_factory=set)     # held jobs alloc does not place
    last: float | None = None


class Controller:
    """The placement controller (see the module notes).

    Parameters
    ----------
    slurm : Scontrol, optional
        How Slurm is reached (default: ``scontrol`` with ``$SLURM_CONF``).
    solver : str
        A registered solver (default ``"best-fit"``).
    order : {"fifo", "las"}
        The job order.
    preempt : {"order", "never"}
        Preemption by order, or none.
    time_limit : float, optional
        Seconds per round.
    max_moves : int
        Running jobs a round may move (default 0).
    decisions : path or file, optional
        Where the JSON lines of the actions go.
    start_timeout : float
        Seconds a released job may stay pending before it is held again.
    las_quantum : float
        LAS ranks by attained GPU-seconds in steps of this many (jobs within
        one step by submission), so that a job is not stopped for one that
        has run a few seconds less (default 600).
    topology : path, optional
        ``topology.conf`` (default: next to ``slurm.conf``).
    log : file
        Where error lines go (default: stderr).
    """

    def __init__(self, slurm: Scontrol | None = None, *, solver: str = "best-fit",
                 order: str = "fifo", preempt: str = "order", time_limit: float | None = None,
                 max_moves: int = 0, decisions=None, start_timeout: float = 60.0,
                 las_quantum: float = 600.0, topology=None, options=None,
                 log: IO | None = None):
        if order not in ORDERS:
            raise InputError(f"order: expected one of {', '.join(ORDERS)}, got {order!r}")
        if preempt not in ("order", "never"):
            raise InputError(f"preempt: expected 'order' or 'never', got {preempt!r}")
        from ..registry import get_solver
        try:
            get_solver(solver)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self.slurm = slurm or Scontrol()
        self.settings: dict[str, Any] = dict(
            solver=solver, time_limit=time_limit, max_moves=max_moves, options=options,
            preempt="order" if preempt == "order" else None)
        self.order, self.start_timeout, self.topology = order, start_timeout, topology
        if not las_quantum > 0:
            raise InputError(f"las_quantum: expected a positive number of GPU-seconds, got "
                             f"{las_quantum!r}")
        self.las_quantum = float(las_quantum)
        self.log = log if log is not None else sys.stderr
        self._decisions = decisions
        self._out: Any = None           # the decisions file, once written to
        self._topo: dict[str, str] = {}  # node -> leaf switch (topology.conf), read once
        self.session: Session | None = None
        self.track = _Track()
        self.number = 0

    @property
    def _live(self) -> Session:
        """The session (the first sync of the nodes makes it)."""
        assert self.session is not None
        return self.session

    # ------------------------------------------------------------------ cycle
    def cycle(self) -> Cycle:
        """One cycle (module notes); never raises for Slurm's failures."""
        t0 = time.perf_counter()
        self.slurm.spent, self.slurm.calls = 0.0, 0
        self.number += 1
        errors: list[str] = []
        try:
            nodes, jobs = self.slurm.nodes(), self.slurm.jobs()
        except SlurmError as exc:
            return self._report(t0, errors=[self._error(str(exc), "nothing changed")])
        now = time.monotonic()
        self._sync_nodes(nodes)
        by_id = {j.id: j for j in jobs}
        self._restart_moves(by_id, errors)
        self._account(by_id, now)
        try:
            self._sync_jobs(by_id, now, errors)
        except InputError as exc:
            return self._report(t0, errors=errors + [self._error(str(exc), "nothing placed")])
        r = self._live.step()
        started, preempted, moved = self._act(r, by_id, errors)
        return self._report(t0, started, preempted, moved, tuple(r.unplaced), errors,
                            r.latency_s)

    def _report(self, t0, started=(), preempted=(), moved=(), waiting=(), errors=(),
                round_s=0.0) -> Cycle:
        return Cycle(self.number, tuple(started), tuple(preempted), tuple(moved),
                     tuple(waiting), tuple(errors), time.perf_counter() - t0,
                     self.slurm.spent, self.slurm.calls, round_s)

    def _error(self, msg: str, then: str = "retried next cycle") -> str:
        line = f"alloc slurm: cycle {self.number}: {msg}; {then}"
        print(line, file=self.log, flush=True)
        return line

    # ------------------------------------------------------------------ nodes
    def _sync_nodes(self, nodes: list[Node]) -> None:
        topo = self.slurm.topology(self.topology) if self.session is None else self._topo
        self._topo = topo
        self._nodes = {n.name: n for n in nodes if n.cpus > 0}
        servers = {name: self._server(n) for name, n in self._nodes.items()}
        if self.session is None:
            from ..session import Session
            levels = ("rack", "server", "gpu") if topo else ("server", "gpu")
            st = self.settings
            self.session = Session(Cluster(tuple(servers.values()), levels),
                                   solver=st["solver"], time_limit=st["time_limit"],
                                   max_moves=st["max_moves"], preempt=st["preempt"],
                                   options=st["options"], name="slurm")
        s = self._live
        have = {sv.id for sv in s.cluster.servers}
        for name, srv in servers.items():
            if name not in have or name in s.failed:
                s.add_server(srv)
        for name in have - set(servers) - set(s.failed):
            s.fail_server(name)
        closed = {n.name for n in nodes if n.closed and n.name in servers}
        for name in closed - set(s.drained) - set(s.failed):
            s.drain_server(name)
        for name in set(s.drained) - closed:
            s.undrain_server(name)

    def _server(self, n: Node) -> Server:
        rack = None
        if self._topo:
            rack = self._topo.get(n.name, f"~{n.name}")
        return Server(n.name, 1000 * n.cpus, max(n.memory, 1), n.gpus,
                      (n.gpu_type or DEFAULT_GPU_TYPE) if n.gpus else None, rack)

    # ------------------------------------------------------------------- jobs
    def _account(self, jobs: dict, now: float) -> None:
        """Attained GPU-seconds of the running jobs since the last cycle (LAS)."""
        tr = self.track
        if tr.last is not None:
            dt = now - tr.last
            for j in jobs.values():
                if j.state == "RUNNING":
                    tr.service[j.id] = tr.service.get(j.id, 0.0) + dt * j.nodes * j.gpus_per_node
        tr.last = now

    def _mine(self, j: SlurmJob) -> bool:
        """Jobs alloc places (held) or places around (running, or released by it)."""
        return j.held or j.active or j.id in self.track.flight or j.id in self.track.moving

    def _sync_jobs(self, jobs: dict, now: float, errors: list) -> None:
        s, tr = self._live, self.track
        mine = {i: j for i, j in jobs.items() if self._mine(j)}
        for jid in [x for x in s.jobs if x not in mine or self._reshaped(mine[x])]:
            s.finish(jid)
            for d in (tr.flight, tr.moving, tr.shape):
                d.pop(jid, None)
        running, waiting = {}, []
        for jid, j in sorted(mine.items()):
            if jid not in s.jobs and not self._submit(j, errors):
                continue
            if j.active and jid not in tr.moving:
                tr.flight.pop(jid, None)
                running[jid] = self._bound(j)
            elif jid in tr.flight and j.held:
                tr.flight.pop(jid)               # held again by someone: alloc's to place
            elif jid in tr.flight and now - tr.flight[jid] > self.start_timeout:
                self._call(self.slurm.hold, jid, errors, f"job {jid} did not start within "
                           f"{self.start_timeout:.0f} s; held again")
                tr.flight.pop(jid)
            elif (jid in tr.flight or jid in tr.moving) and s.jobs[jid].current is not None:
                waiting.append(jid)              # on its way to where alloc put it
        running.update(self._refit(waiting, running, errors))
        s.reconcile(running, where="slurm")
        q = self.las_quantum
        key = (lambda i: tr.submit[i]) if self.order == "fifo" else \
            (lambda i: (int(tr.service.get(i, 0.0) // q), tr.submit[i]))
        s.set_order(sorted(s.jobs, key=key), where=self.order)

    def _refit(self, waiting: list, running: dict, errors: list) -> dict:
        """GPUs of the jobs released (or moving) and not started yet: the
        counts alloc gave them on each node, on indices no running job holds
        (Slurm picks the indices when it starts them).  One that no longer
        fits is held again (alloc places it anew)."""
        s, tr = self._live, self.track
        used: dict[str, set] = {}
        for gpus in running.values():
            for g in gpus if isinstance(gpus, list) else ():
                n, k = GpuKey.parse(g)
                used.setdefault(n, set()).add(k)
        size = {sv.id: sv.gpus for sv in s.cluster.servers}
        out = {}
        for jid in waiting:
            cur = s.jobs[jid].current
            if not cur.gpus:
                out[jid] = next(iter(cur.cpu))
                continue
            gpus = []
            for n in sorted({server_of(g.gpu) for g in cur.gpus}):
                want = sum(1 for g in cur.gpus if server_of(g.gpu) == n)
                free = [k for k in range(size.get(n, 0)) if k not in used.setdefault(n, set())]
                gpus += [gpu_key(n, k) for k in free[:want]]
                used[n].update(free[:want])
            if len(gpus) == len(cur.gpus):
                out[jid] = gpus
            elif jid in tr.flight and self._call(self.slurm.hold, jid, errors,
                                                 f"job {jid}: its nodes are taken; held again"):
                tr.flight.pop(jid)
        return out

    def _job(self, j: SlurmJob) -> Job:
        n = j.nodes * j.gpus_per_node
        return Job(j.id, n, cpu=1000 * j.cpus, mem=j.memory,
                   gpu_types=(j.gpu_type,) if j.gpu_type and n else (),
                   locality="server" if j.nodes == 1 and n > 1 else None)

    def _reshaped(self, j: SlurmJob) -> bool:
        old = self.track.shape.get(j.id)
        return old is not None and j.held and old != self._job(j)

    def _submit(self, j: SlurmJob, errors: list) -> bool:
        whole = {n.gpus for n in self._nodes.values() if n.gpus}
        if j.nodes > 1 and j.held and (j.gpus_per_node == 0 or {j.gpus_per_node} != whole):
            if j.id not in self.track.refused:
                self.track.refused.add(j.id)
                errors.append(self._error(
                    f"job {j.id}: a job of {j.nodes} nodes takes whole nodes' GPUs "
                    f"(--gres=gpu:{'/'.join(map(str, sorted(whole))) or 'N'} per node)",
                    "left held"))
            return False
        job = self._job(j)
        try:
            self._live.submit(job, where=f"job {j.id}")
        except InputError as exc:
            errors.append(self._error(str(exc), "not placed"))
            return False
        self.track.shape[j.id] = job
        self.track.submit.setdefault(j.id, (j.submit, j.id))
        return True

    @staticmethod
    def _bound(j: SlurmJob):
        if j.gpus_per_node == 0:
            return j.node_list[0] if j.node_list else None
        gpus = [gpu_key(n, k) for n in sorted(j.bound) for k in j.bound[n]]
        return gpus or None

    # ----------------------------------------------------------------- acting
    def _act(self, r, jobs: dict, errors: list) -> tuple[list, list, list]:
        s = self._live
        held_back = set()
        for p in r.start:
            j = jobs[p.job]
            if not self._even(p, j):          # waits; the next round places the others
                s.stop(p.job, requeue=True, hold=True, where="slurm")
                held_back.add(p.job)
        started, preempted, moved = [], [], []
        for p in r.preempt:
            if r.preempted_for.get(p.job) in held_back:
                continue                      # what it was stopped for does not start
            state = jobs[p.job].state
            if state == "COMPLETING":
                continue                      # ending already: nothing to stop
            stop = self.slurm.hold if state == "PENDING" else self.slurm.requeue
            if self._call(stop, p.job, errors):
                self.track.flight.pop(p.job, None)
                preempted.append(p.job)
                self._decide("preempt", p)
        for p in r.move:
            if self._call(self.slurm.requeue, p.job, errors):
                self.track.moving[p.job] = _nodes(p)
                moved.append(p.job)
                self._decide("move", p)
        for p in r.start:
            if p.job in held_back:
                continue
            if self._call(lambda jid: self.slurm.start(jid, _nodes(p)), p.job, errors):
                self.track.flight[p.job] = time.monotonic()
                started.append(p.job)
                self._decide("start", p)
        return started, preempted, moved

    def _restart_moves(self, jobs: dict, errors: list) -> None:
        """Moved jobs Slurm has back in the queue start on their new nodes."""
        tr = self.track
        for jid, nodes in list(tr.moving.items()):
            j = jobs.get(jid)
            if j is None or not (j.held or j.active):
                tr.moving.pop(jid)
            elif j.held and self._call(lambda x: self.slurm.start(x, nodes), jid, errors):
                tr.moving.pop(jid)
                tr.flight[jid] = time.monotonic()

    @staticmethod
    def _even(p, j: SlurmJob) -> bool:
        """The placement is one Slurm can run: ``k`` GPUs on each of ``N`` nodes."""
        if j.nodes == 1 or not p.gpus:
            return True
        per: dict[str, int] = {}
        for g in p.gpus:
            n = server_of(g.gpu)
            per[n] = per.get(n, 0) + 1
        return len(per) == j.nodes and set(per.values()) == {j.gpus_per_node}

    def _call(self, fn, jid, errors: list, done: str | None = None) -> bool:
        try:
            fn(jid)
        except SlurmError as exc:
            errors.append(self._error(str(exc)))
            return False
        if done:
            errors.append(self._error(done, "placed anew"))
        return True

    def _decide(self, action: str, p) -> None:
        if self._decisions is None:
            return
        if self._out is None:
            self._out = self._decisions if hasattr(self._decisions, "write") else \
                open(self._decisions, "a")
        gpus: dict[str, int] = {}
        for g in p.gpus:
            n = server_of(g.gpu)
            gpus[n] = gpus.get(n, 0) + 1
        self._out.write(json.dumps({"cycle": self.number, "action": action, "job": p.job,
                                    "nodes": _nodes(p), "gpus": gpus}) + "\n")
        self._out.flush()

    def close(self) -> None:
        """Close the decisions file (if this controller opened it)."""
        if self._out is not None and self._out is not self._decisions:
            self._out.close()
        self._out = None


def _nodes(p) -> list[str]:
    return sorted({server_of(g.gpu) for g in p.gpus} | set(p.cpu) | set(p.mem))


# ------------------------------------------------------------------ command line
def _parser() -> argparse.ArgumentParser:
    from ..cli import _Parser
    p = _Parser(prog="alloc slurm", description="A placement controller for Slurm: alloc "
                "places the held jobs of the Slurm in SLURM_CONF.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="run the controller")
    how = r.add_mutually_exclusive_group()
    how.add_argument("--once", action="store_true", help="one cycle, then exit (default)")
    how.add_argument("--interval", type=float, default=None, metavar="S",
                     help="a cycle every S seconds until interrupted")
    r.add_argument("--cycles", type=int, default=None, metavar="N",
                   help="with --interval: stop after N cycles (default: run until interrupted)")
    r.add_argument("--solver", default="best-fit", help="solver (default: best-fit)")
    r.add_argument("--order", default="fifo", choices=ORDERS,
                   help="job order: fifo (submission) or las (least attained GPU-seconds) "
                        "(default: fifo)")
    r.add_argument("--preempt", default="order", choices=("order", "never"),
                   help="stop running jobs for higher-ranked held ones (default: order)")
    r.add_argument("--decisions", default=None, metavar="FILE",
                   help="append one JSON line per action here (default: none)")
    r.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="seconds per round (default: 60)")
    r.add_argument("--max-moves", type=int, default=0, metavar="K",
                   help="running jobs a round may move (default: 0)")
    r.add_argument("--las-quantum", type=float, default=600.0, metavar="GPU_S",
                   help="with --order las: attained GPU-seconds counted in steps of this "
                        "many (default: 600)")
    r.add_argument("--start-timeout", type=float, default=60.0, metavar="S",
                   help="hold a released job again if Slurm has not started it after S "
                        "seconds (default: 60)")
    r.add_argument("--topology", default=None, metavar="FILE",
                   help="topology.conf (default: next to slurm.conf)")
    return p


def slurm_main(argv: list[str] | None = None) -> int:
    """``alloc slurm run``: the controller's command line; returns the exit code."""
    from ..cli import EXIT_INPUT, EXIT_OK
    args = _parser().parse_args(argv)
    try:
        ctl = Controller(solver=args.solver, order=args.order, preempt=args.preempt,
                         time_limit=args.time_limit, max_moves=args.max_moves,
                         decisions=args.decisions, start_timeout=args.start_timeout,
                         las_quantum=args.las_quantum, topology=args.topology)
    except InputError as exc:
        print(f"alloc slurm: {exc}", file=sys.stderr)
        return EXIT_INPUT
    n = 0
    try:
        while True:
            c = ctl.cycle()
            n += 1
            print(f"alloc slurm: cycle {c.number}: {len(c.started)} started, "
                  f"{len(c.preempted)} preempted, {len(c.moved)} moved, {len(c.waiting)} "
                  f"waiting ({1e3 * c.alloc_s:.0f} ms alloc, {1e3 * c.slurm_s:.0f} ms Slurm)",
                  file=sys.stderr)
            if args.interval is None:
                return EXIT_INPUT if c.errors and ctl.session is None else EXIT_OK
            if args.cycles is not None and n >= args.cycles:
                return EXIT_OK
            time.sleep(max(0.0, args.interval - c.wall_s))
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        ctl.close()


def read_topology(path, nodes=None):
    """The levels and each node's domains of Slurm's ``topology.conf``, in
    its tree form (switches: levels ``leaf``, ``spine``, ``core``, ...) or
    its block form (base blocks and the larger blocks of ``BlockSizes``):
    `alloc.adapters.slurm_topology.read_topology_conf`.

    Parameters
    ----------
    path : path
        The ``topology.conf``.
    nodes : iterable of str, optional
        The cluster's node names (a line naming another node is an error).

    Returns
    -------
    SlurmTopology
        ``levels`` (outermost first, then ``server`` and ``gpu``) and
        ``domains`` (node -> {level: switch or block}): ``Cluster(servers,
        levels)`` with each server's ``domains``.

    Raises
    ------
    InputError
        One line naming the file and the line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from alloc.adapters.slurm import read_topology
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "topology.conf"
    >>> _ = p.write_text("\\n".join(["BlockName=b1 Nodes=n[1-4]", "BlockName=b2 Nodes=n[5-8]",
    ...                                "BlockSizes=4,8"]))
    >>> levels, domains, form = read_topology(p)
    >>> levels, domains["n6"], form
    (('block2', 'block', 'server', 'gpu'), {'block2': 'b1-b2', 'block': 'b2'}, 'block')
    """
    from .slurm_topology import read_topology_conf
    return read_topology_conf(path, nodes)


__all__ = ["Controller", "Cycle", "ORDERS", "read_topology", "slurm_main"]
