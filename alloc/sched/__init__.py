r"""The scheduling layer: schedulers over time as stacks of policies above
[`Session`][alloc.session.Session].

A scheduler is a stack of policies, one per slot: admission, order,
placement, sizing, shares and mechanism (`alloc.sched.kinds`).  Every policy
of every kind lives in one registry (`alloc.sched.registry`): built-in ones,
alloc's solvers as placement policies, Gavel's share policies, plug-ins
declared under the entry-point group ``alloc.policies`` and factories
registered at run time.  ``alloc policies`` lists them.

Examples
--------
>>> from alloc.sched import get_policy, policies
>>> {"fifo", "las", "srtf"} <= {p.name for p in policies("order")}
True
>>> order = get_policy("order", "las").build()
>>> order.preemptive
True
"""
from .kinds import (EVENT_KINDS, KIND_MEANING, KINDS, Admission, BaseMechanism, Context, Control,
                    Event, JobView, KeyOrder, Mechanism, Order, Shares, Size, Sizing)
from .registry import (ENTRY_POINT_GROUP, NEEDS, NEEDS_MEANING, PolicyError, PolicyInfo, declare,
                       get_policy, policies, policy, register_policy, unregister_policy)

__all__ = ["Admission", "BaseMechanism", "Context", "Control", "ENTRY_POINT_GROUP", "EVENT_KINDS",
           "Event", "JobView", "KINDS", "KIND_MEANING", "KeyOrder", "Mechanism", "NEEDS",
           "NEEDS_MEANING", "Order", "PolicyError", "PolicyInfo", "Shares", "Size", "Sizing",
           "declare", "get_policy", "policies", "policy", "register_policy", "unregister_policy"]
