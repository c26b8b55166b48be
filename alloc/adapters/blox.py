r"""A drop-in placement policy for Blox (Agarwal et al., EuroSys'24).

Blox's scheduler loop asks its placement policy, every round,

    to_suspend, to_launch = policy.place(job_state, cluster_state, new_job_schedule)

with Blox's shapes:

* ``job_state.active_jobs``: ``{job id: job dict}``; a job dict has
  ``num_GPUs``, ``is_running`` and optionally ``placement_preference``
  (``"consolidated"``: all its GPUs on one node);
* ``cluster_state.server_map``: ``{node id: node dict}`` (``numGPUs``,
  optionally ``numCPUcores``);
* ``cluster_state.gpu_df``: one row per GPU with the columns ``GPU_ID``
  (global index), ``Node_ID``, ``Local_GPU_ID``, ``IN_USE`` and ``JOB_IDS``
  (the job on it, or None); a pandas DataFrame or any sequence of such
  mappings (pandas is not needed here);
* ``new_job_schedule["job_order"]``: the scheduler's ranking, highest first,
  as ``(job id, job dict)`` pairs (what sorting ``active_jobs.items()``
  gives) or bare ids.

It returns the job ids to terminate and ``{job id: [GPU_ID, ...]}`` to
launch; Blox terminates first, then launches.

`AllocPlacement` keeps one [Session][alloc.session.Session] with Blox's
integer ids and GPU_IDs as the caller's keys.  Each round: new nodes are
added, new jobs submitted and jobs that left ``active_jobs`` finished; what
runs where (``JOB_IDS``) is told to the session
([reconcile][alloc.session.Session.reconcile]); the order becomes the
session's; one round is solved.  Blox has no GPU types (every GPU is
``alloc.model.DEFAULT_GPU_TYPE``) and asks no CPU or memory (jobs ask 0).  A
job the round moves is terminated and launched on its new GPUs; preempted jobs
are terminated.

Reconcile follows what changed.  After a round the adapter expects Blox to
run what it had plus the launches, minus the terminations; the next round it
tells the session only the jobs whose ``JOB_IDS`` differ from that (started,
moved or ended outside the adapter's decisions: a partial reconcile), so the
call costs what changed, not what runs.  ``reconcile="full"`` states every
running job every round, and `AllocPlacement.reconcile_all` asks for one full
statement at the next round.

The order is Blox's (``job_order``), or, with ``order=NAME``, any order
policy of alloc's registry (``alloc policies --kind order``, a plug-in's
too) over what the adapter knows of each job: its ``submit_time`` (else
when it was first seen), GPUs, whether it runs and the GPU-seconds it has
held, on Blox's clock (``cluster_state.time``; the round number when Blox
gives none); an order that needs what Blox's jobs do not give is refused in
one line.

With ``preempt="order"`` (the default) a running job ranked below a waiting
job that cannot otherwise be placed is suspended for it, lowest-ranked first,
as few as possible ([alloc.preempt][]): on 1-GPU jobs the same jobs launch
and stop as with Blox's default placement.  ``preempt_packed=True`` (a
session setting) places a multi-GPU job that needs victims on one node
whenever stopping jobs ranked below it makes room there, rather than over
its victims' nodes.

Every other [Session][alloc.session.Session] setting passes through as a
keyword (``objective``, ``move_cost``, ``seed``, ``models``, and any the
session takes); all of them are checked when the policy is made, so a solver
that cannot run here (``cpsat`` without OR-Tools) fails there, not in the
scheduler's loop.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..gpukey import gpu_key
from ..errors import InputError
from ..model import DEFAULT_GPU_TYPE, Cluster, Job, Server

if TYPE_CHECKING:
    from ..session import Reconciled, RoundResult, Session


def gpu_rows(gpu_df) -> list[dict]:
    """The rows of Blox's ``gpu_df`` as dicts (a DataFrame or a sequence of mappings)."""
    if hasattr(gpu_df, "to_dict"):
        return list(gpu_df.to_dict("records"))
    if isinstance(gpu_df, Iterable):
        return [dict(r) for r in gpu_df]
    raise InputError(f"gpu_df: expected a DataFrame or rows, got {type(gpu_df).__name__}")


def _field(row: Mapping, key: str, where: str):
    if key not in row:
        raise InputError(f"{where}: missing column {key!r}")
    return row[key]


def node_name(node_id) -> str:
    """The server id of a Blox node."""
    return f"node{node_id}"


#: How each round tells the session what runs.
RECONCILE = ("changes", "full")


class AllocPlacement:
    """Blox's placement policy, answered by alloc (see the module notes).

    Parameters
    ----------
    args : object, optional
        Blox passes its arguments to every policy; ignored.
    solver : str
        A registered solver (default ``"best-fit"``).
    objective : {"throughput", "gpus", "jobs"}, optional
        What the solver maximises (default: the session's, ``"throughput"``).
    time_limit : float, optional
        Seconds per round.
    max_moves : int
        Running jobs a round may move (default 0).
    preempt : {"order", None}
        Preemption by the scheduler's order (default), or none beyond the
        tenancy rules (Blox has no tenants: none).
    options : mapping, optional
        The solver's options.
    reconcile : {"changes", "full"}
        Tell the session only the jobs whose GPUs changed since the last
        round (default), or every running job every round.
    order : str, optional
        A registered order policy, ``NAME[:KEY=VALUE,...]``, instead of
        Blox's ``job_order`` (default: Blox's).
    **session
        Any other [Session][alloc.session.Session] setting (``move_cost``,
        ``seed``, ``models``, ...), passed through.

    Raises
    ------
    InputError
        A setting the session refuses (an unknown solver, option or
        objective, a solver without a capability the call needs).
    SolverUnavailable
        The solver cannot run here (one line saying how to install it).

    Examples
    --------
    >>> from alloc.adapters.blox import AllocPlacement
    >>> policy = AllocPlacement(solver="best-fit", max_moves=0, seed=1)
    >>> policy.settings["seed"]
    1
    """

    def __init__(self, args: Any = None, *, solver: str = "best-fit",
                 objective: str | None = None, time_limit: float | None = None,
                 max_moves: int = 0, preempt: str | None = "order",
                 options: Mapping | None = None, reconcile: str = "changes",
                 order: str | None = None, **session: Any):
        from .settings import check_session_settings
        if reconcile not in RECONCILE:
            raise InputError(f"reconcile: expected one of {', '.join(RECONCILE)}, got "
                             f"{reconcile!r}")
        self.settings: dict[str, Any] = check_session_settings(
            dict(solver=solver, objective=objective, time_limit=time_limit, max_moves=max_moves,
                 preempt=preempt, options=options, **session), "blox")
        self.reconcile = reconcile
        self.order = None
        if order is not None:
            from ..sched.views import build_order
            self.order, _ = build_order(order)
        self._ranker: Any = None
        self._rounds = 0
        self.session: Session | None = None
        self._nodes: dict = {}          # node id -> [(Local_GPU_ID, GPU_ID)]
        self._keys: dict = {}           # alloc's GPU name -> GPU_ID
        self._expected: dict | None = None   # job id -> [GPU_ID, ...] Blox should run now
        self.last: RoundResult | None = None
        self.last_reconciled: Reconciled | None = None

    @property
    def _live(self) -> Session:
        """The session (the first sync of the nodes makes it)."""
        assert self.session is not None
        return self.session

    def reconcile_all(self) -> None:
        """State every running job at the next round (a full reconcile),
        whatever ``reconcile`` says."""
        self._expected = None

    # ------------------------------------------------------------ the round
    def place(self, job_state, cluster_state, new_job_schedule) -> tuple[list, dict]:
        """One Blox round: ``(jobs_to_terminate, {job id: [GPU_ID, ...]})``."""
        rows = gpu_rows(cluster_state.gpu_df)
        self._sync_cluster(rows, getattr(cluster_state, "server_map", {}) or {})
        s = self._live
        active = job_state.active_jobs
        self._sync_jobs(active)
        running: dict = {}
        for r in rows:
            jid = r.get("JOB_IDS")
            if jid is not None and jid == jid and jid in active:
                running.setdefault(jid, []).append(r["GPU_ID"])
        for g in running.values():
            g.sort()
        self._tell(running, active)
        self._rounds += 1
        if self.order is not None:
            self._rank(active, getattr(cluster_state, "time", self._rounds))
        else:
            order = [x[0] if isinstance(x, tuple) else x
                     for x in (new_job_schedule or {}).get("job_order", ())]
            s.set_order([j for j in order if j in active], where="job_order")
        res = self.last = s.step()
        terminate = list(res.stop) + [p.job for p in res.move]
        launch = {p.job: list(res.gpus[p.job]) for p in res.start + res.move}
        for j in terminate:
            running.pop(j, None)
        running.update((j, sorted(g)) for j, g in launch.items())
        self._expected = running
        return terminate, launch

    def _tell(self, running: dict, active: Mapping) -> None:
        """What runs, to the session: every job (a full reconcile), or only
        those whose GPUs differ from what the last round left."""
        s, before = self._live, self._expected
        if before is None or self.reconcile == "full":
            self.last_reconciled = s.reconcile(running, where="gpu_df")
            return
        changed = {j: g for j, g in running.items() if before.get(j) != g}
        ended = [j for j in before if j not in running and j in active]
        if changed or ended:
            self.last_reconciled = s.reconcile(changed, stopped=ended, where="gpu_df")
        else:
            self.last_reconciled = None

    def _rank(self, active: Mapping, now: float) -> None:
        """The session's order from the registry's order policy."""
        from ..sched.views import Ranker
        if self._ranker is None:
            self._ranker = Ranker(self._live, self.order)
        for jid, job in active.items():
            t = job.get("submit_time") if isinstance(job, Mapping) else None
            self._ranker.arrival.setdefault(jid, float(t) if isinstance(t, (int, float))
                                            else float(now))
        self._ranker.rank(float(now))

    # ------------------------------------------------------------- syncing
    def _sync_cluster(self, rows: list[dict], server_map: Mapping) -> None:
        nodes: dict = {}
        for k, r in enumerate(rows):
            w = f"gpu_df[{k}]"
            nodes.setdefault(_field(r, "Node_ID", w), []).append(
                (_field(r, "Local_GPU_ID", w), _field(r, "GPU_ID", w)))
        new = [n for n in nodes if n not in self._nodes]
        for n in new:
            for local, gid in nodes[n]:
                self._keys[gpu_key(node_name(n), local)] = gid
        if self.session is None:
            from .settings import make_session
            servers = tuple(self._server(n, nodes[n], server_map) for n in sorted(new))
            self.session = make_session(Cluster(servers), self.settings,
                                        gpu_keys=lambda g: self._keys.get(g, g), name="blox")
        else:
            for n in sorted(new):
                self.session.add_server(self._server(n, nodes[n], server_map))
        self._nodes.update((n, nodes[n]) for n in new)
    @staticmethod
    def _server(node, gpus: list, server_map: Mapping) -> Server:
        info = server_map.get(node) or {}
        locals_ = sorted(g for g, _ in gpus)
        if locals_ != list(range(len(locals_))):
            raise InputError(f"gpu_df: node {node!r} has Local_GPU_IDs {locals_}; expected "
                             f"0..{len(locals_) - 1}")
        cores = info.get("numCPUcores") if isinstance(info, Mapping) else None
        cpu = 1000 * int(cores) if isinstance(cores, int) and cores > 0 else 1000
        return Server(node_name(node), cpu, 1, len(locals_), DEFAULT_GPU_TYPE)

    def _sync_jobs(self, active: Mapping) -> None:
        s = self._live
        known = s.jobs
        for jid in [j for j in known if j not in active]:
            s.finish(jid, where="active_jobs")
        for jid, job in active.items():
            if jid in known:
                continue
            n = _field(job, "num_GPUs", f"active_jobs[{jid!r}]")
            loc = "server" if job.get("placement_preference") == "consolidated" else None
            s.submit(Job(jid, n, locality=loc if n > 1 else None), where="active_jobs")


__all__ = ["AllocPlacement", "RECONCILE", "gpu_rows", "node_name"]
