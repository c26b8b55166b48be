r"""A Kubernetes scheduler: alloc places the pods whose ``schedulerName`` is ``alloc``.

Deployment (``docs/kubernetes.md``): ``alloc k8s run --interval S`` runs as
one replica next to the API server (a Deployment with ``replicas: 1`` and
the ``Recreate`` strategy: no leader election), with the ClusterRole given
there.  It needs the ``k8s`` extra (the official ``kubernetes`` client).

The cluster.  One server per Node: allocatable ``cpu`` (milli-cores),
``memory`` (MiB), ``nvidia.com/gpu``; the GPU type from the label
``nvidia.com/gpu.product``; topology levels from node labels, outermost first
(``--level NAME=LABEL``, default Kueue's ``zone``, ``block``, ``rack``
labels), the ordered-label form ``Server(domains={level: value})`` where the
core has it (else only ``rack``).  A cordoned or NotReady node is drained:
nothing new starts there, its pods stay.  A deleted node's pods are deleted
(they can never run) and reported.

The jobs.  A pod is one job; a gang (label ``scheduling.x-k8s.io/pod-group``,
its size from the PodGroup's ``spec.minMember`` or the annotation
``alloc.io/min-member``) is **one** job asking the sum of its pods' GPUs,
CPU and memory, so that the core's gang rule (a job gets all its GPUs or
none) is the all-or-nothing rule; its placement is then split into whole
pods, each on one node with exactly its GPUs (a placement that does not
split waits one round and is placed anew).  GPU sharing: annotation
``alloc.io/gpu-milli``.  GPU type: node selector or required affinity on
``nvidia.com/gpu.product``.  Priority: ``spec.priority``.  Required or
preferred topology: Kueue's ``podset-required-topology`` /
``podset-preferred-topology`` annotations.  Pods bound on nodes (by alloc or
anyone) are running jobs; another scheduler's pods and terminating pods are
ranked first, so that alloc never preempts them.

Each cycle (`Scheduler.cycle`):

1. the watch events since the last cycle update the cache (lists and watches
   with resourceVersions; nothing is polled);
2. the Session is brought up to date: nodes added, failed, drained; jobs
   submitted, finished, reconciled; the order set, a registered order
   policy (`alloc.sched.views.build_order`) over what pods give, their
   priority (``--order priority``: highest first, running before waiting at
   equal priority so that only a *lower* priority is ever preempted, then
   creation time; ``fifo``: running first, then creation time), with the
   pods another scheduler binds first;
3. one round (`Session.step`), preemption by order unless ``--preempt never``;
4. act: a preempted job's pods are deleted, each with a Warning Event
   ``Preempted`` that names the job it was stopped for; the job it was
   stopped for waits until those pods are gone (as a nominated pod does),
   then starts; a started job's pods are bound (``pods/binding``, with the
   annotation ``alloc.io/gpus``: the node's GPU indices, and for a gang
   ``alloc.io/gang`` / ``alloc.io/gang-size``), each with a ``Scheduled``
   Event; if one binding of a gang fails, the pods already bound are deleted
   (rolled back); a waiting pod gets a Warning Event ``FailedScheduling``
   with its reason when it first waits and when the reason changes (at most
   once a minute; bad input at once).  Nothing moves: a bound pod cannot
   change nodes.  Under ``--interval`` a cycle does not wait for its
   bindings (the next one takes the pods as bound, as kube-scheduler's
   assumed pods; a binding that fails gives its pods back to the queue).  One JSON line per action goes to ``--decisions``:
   ``{"cycle", "action": "start"|"preempt"|"evict"|"rollback", "job",
   "pods": {pod: node}, "nodes", "gpus": {node: count}, "reason", "for"}``.

Faults.  A failed call is one log line and the cycle goes on; a binding is
retried with backoff after reading the pod's ``spec.nodeName`` (so nothing is
bound twice; the API server refuses a second binding too).  A broken watch
resumes from its last resourceVersion; a ``410 Gone`` lists again.  A
restarted scheduler lists everything, takes bound pods as running (their
GPUs from ``alloc.io/gpus``), and rolls back a gang it finds bound in part.

Bad input (a pod asking a GPU type no node has, a malformed topology
annotation, a pod group with fewer pods than its min-member, a negative or
unreadable request): one log line and a Warning Event; the pod waits with
the reason, nothing else is affected.
"""
from __future__ import annotations

from .cli import k8s_main
from .scheduler import Cycle, Scheduler
from .translate import Levels, parse_levels

__all__ = ["Cycle", "Levels", "Scheduler", "k8s_main", "parse_levels"]
