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
added, new jobs submitted and jobs that left ``active_jobs`` finished;
[reconcile][alloc.session.Session.reconcile] states what runs where
(``JOB_IDS``); the order becomes the session's; one round is solved.  Blox
has no GPU types (every GPU is ``alloc.model.DEFAULT_GPU_TYPE``) and asks no
CPU or memory (jobs ask 0).  A job the round moves is terminated and launched
on its new GPUs; preempted jobs are terminated.

With ``preempt="order"`` (the default) a running job ranked below a waiting
job that cannot otherwise be placed is suspended for it, lowest-ranked first,
as few as possible ([alloc.preempt][]): on 1-GPU jobs the same jobs launch
and stop as with Blox's default placement.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..gpukey import gpu_key
from ..errors import InputError
from ..model import DEFAULT_GPU_TYPE, Cluster, Job, Server

if TYPE_CHECKING:
    from ..session import RoundResult, Session


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


class AllocPlacement:
    """Blox's placement policy, answered by alloc (see the module notes).

    Parameters
    ----------
    args : object, optional
        Blox passes its arguments to every policy; ignored.
    solver : str
        A registered solver (default ``"best-fit"``).
    time_limit : float, optional
        Seconds per round.
    max_moves : int
        Running jobs a round may move (default 0).
    preempt : {"order", None}
        Preemption by the scheduler's order (default), or none beyond the
        tenancy rules (Blox has no tenants: none).
    options : mapping, optional
        The solver's options.
    """

    def __init__(self, args: Any = None, *, solver: str = "best-fit",
                 time_limit: float | None = None, max_moves: int = 0,
                 preempt: str | None = "order", options: Mapping | None = None):
        self.settings: dict[str, Any] = dict(solver=solver, time_limit=time_limit,
                                             max_moves=max_moves, preempt=preempt,
                                             options=options)
        self.session: Session | None = None
        self._nodes: dict = {}          # node id -> [(Local_GPU_ID, GPU_ID)]
        self._keys: dict = {}           # alloc's GPU name -> GPU_ID
        self.last: RoundResult | None = None

    @property
    def _live(self) -> Session:
        """The session (the first sync of the nodes makes it)."""
        assert self.session is not None
        return self.session

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
        s.reconcile({j: sorted(g) for j, g in running.items()}, where="gpu_df")
        order = [x[0] if isinstance(x, tuple) else x
                 for x in (new_job_schedule or {}).get("job_order", ())]
        s.set_order([j for j in order if j in active], where="job_order")
        res = self.last = s.step()
        terminate = list(res.stop) + [p.job for p in res.move]
        launch = {p.job: list(res.gpus[p.job]) for p in res.start + res.move}
        return terminate, launch

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
            servers = tuple(self._server(n, nodes[n], server_map) for n in sorted(new))
            from ..session import Session
            st = self.settings
            self.session = Session(Cluster(servers), solver=st["solver"],
                                   time_limit=st["time_limit"], max_moves=st["max_moves"],
                                   preempt=st["preempt"], options=st["options"],
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


__all__ = ["AllocPlacement", "gpu_rows", "node_name"]
