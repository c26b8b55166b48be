"""Adapters: alloc as the placement step of existing schedulers.

* [alloc.adapters.slurm][] -- a placement controller for a real Slurm: held
  jobs are placed with ``scontrol`` (``alloc slurm run``);
* [alloc.adapters.kubernetes][] -- a scheduler for a Kubernetes API server:
  pods with ``schedulerName: alloc`` are bound, gangs all or nothing
  (``alloc k8s run``; the ``k8s`` extra);
* [alloc.adapters.blox][] -- a drop-in placement policy for Blox
  (``place(job_state, cluster_state, new_job_schedule)``).

Each keeps one [Session][alloc.session.Session] across the scheduler's rounds
and states what the scheduler sees as running with
[reconcile][alloc.session.Session.reconcile] before every round.  Nothing here
is imported by ``import alloc``.
"""
