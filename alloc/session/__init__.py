"""Sessions: a scheduler loop's cluster and jobs across rounds.

A scheduler calls [`alloc.allocate`][alloc.solve.allocate] every round with the jobs waiting
and the jobs running.  A [`Session`][alloc.session.Session] keeps both: the scheduler reports
*events* (a job arrived, finished, failed, was stopped or preempted; a server
failed, was drained or added; priorities and ranks changed; what runs, as the
scheduler sees it: `Session.reconcile`) and asks for a *round*
([`Session.step`][alloc.session.Session.step]), which answers with what to change -- jobs to start,
to move and to preempt, each with its binding (GPUs, CPU and memory per
server) -- and makes the placed jobs running.

* Placements are stable: a running job stays exactly where it runs unless
  the session allows moves (``max_moves`` / ``move_cost``) and the solver
  makes them, or the tenancy rules let a solver with preemption stop it.
* Bad events raise a one-line [`InputError`][alloc.errors.InputError] and change
  nothing; a batch of events ([`Session.apply`][alloc.session.Session.apply]) is atomic.
* Per-round work outside the core is proportional to what changed: jobs are
  validated when submitted, the cluster object (and its compiled arrays) is
  kept between rounds.  Every round still goes through the core's checked
  path ([`alloc.solve.run_solver`][alloc.solve.run_solver]: finish, honest status,
  [`alloc.violations`][alloc.check.violations]).

Modules: `core` (the session), [`events`][alloc.session.Session.events] (the JSON form of events),
`checks` (incremental validation), `journal` (atomic batches), `result`
(a round's answer).  Drained and failed servers are reduced out of each
round's call ([`alloc.reductions.ClosedServers`][alloc.reductions.ClosedServers]).
"""
from .core import Session
from .events import apply_event, job_from_dict, server_from_dict
from .result import Reconciled, RoundResult

__all__ = ["Reconciled", "RoundResult", "Session", "apply_event", "job_from_dict",
           "server_from_dict"]
