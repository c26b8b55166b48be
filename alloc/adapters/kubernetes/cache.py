"""What the scheduler knows of the API server: nodes, pods and pod groups.

Filled by lists and watch events (`Cache.apply`); the scheduler's own
bindings are *assumed* (`Cache.assume`) until the watch shows them, so that
a pod the scheduler bound is never taken for a waiting one because its
update is still on its way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .translate import ENDED, Levels, PodView, pod_view


def _key(obj: dict) -> str:
    m = obj.get("metadata") or {}
    ns = m.get("namespace")
    return f"{ns}/{m.get('name')}" if ns else str(m.get("name"))


@dataclass
class Cache:
    """Objects by key (``namespace/name``; nodes by name)."""
    levels: Levels = field(default_factory=Levels)
    nodes: dict[str, dict] = field(default_factory=dict)
    pods: dict[str, dict] = field(default_factory=dict)
    podgroups: dict[str, dict] = field(default_factory=dict)
    #: pod key -> (uid, node, annotations) of bindings not seen in the watch yet
    assumed: dict[str, tuple[str, str, dict]] = field(default_factory=dict)
    #: (uid, resourceVersion) -> PodView: each version read once
    _views: dict[tuple[str, str], PodView] = field(default_factory=dict)
    #: keys of pods that have ended (Succeeded or Failed): they hold nothing
    ended: set[str] = field(default_factory=set)
    changed: bool = True
    nodes_changed: bool = True

    def apply(self, item: tuple) -> None:
        """One item of a `Watcher` queue (a list or an event)."""
        what, kind = item[0], item[1]
        store: dict[str, Any] = getattr(self, kind)
        self.changed = True
        if kind == "nodes":
            self.nodes_changed = True
        if what == "list":
            store.clear()
            if kind == "pods":
                self.ended.clear()
            for obj in item[2]:
                store[_key(obj)] = obj
                if kind == "pods":
                    self._mark(_key(obj), obj)
            return
        ev = item[2]
        obj = ev.get("object") or {}
        k = _key(obj)
        if ev.get("type") == "DELETED":
            store.pop(k, None)
            self.ended.discard(k)
        else:
            store[k] = obj
            if kind == "pods":
                self._mark(k, obj)

    def _mark(self, key: str, pod: dict) -> None:
        if (pod.get("status") or {}).get("phase") in ENDED:
            self.ended.add(key)
        else:
            self.ended.discard(key)

    def keys(self, ended: bool = False) -> list[str]:
        """Pod keys (without the ended pods unless ``ended``)."""
        if ended or not self.ended:
            return list(self.pods)
        return [k for k in self.pods if k not in self.ended]

    def assume(self, key: str, uid: str, node: str, annotations: dict) -> None:
        """The scheduler bound the pod: treat it as bound until the watch says so."""
        self.assumed[key] = (uid, node, annotations)
        self.changed = True

    def forget(self, key: str) -> None:
        """A binding that did not happen (or a pod the scheduler deleted)."""
        self.assumed.pop(key, None)
        self.changed = True

    def view(self, key: str) -> PodView | None:
        """The pod as alloc reads it (assumed binding applied), or None."""
        pod = self.pods.get(key)
        if pod is None:
            self.assumed.pop(key, None)
            return None
        meta = pod.get("metadata") or {}
        uid, rv = meta.get("uid", ""), meta.get("resourceVersion", "")
        a = self.assumed.get(key)
        if a is not None and (a[0] != uid or (pod.get("spec") or {}).get("nodeName")):
            self.assumed.pop(key)       # another pod of that name, or the watch caught up
            a = None
        if a is None:
            v = self._views.get((uid, rv))
            if v is None:
                v = pod_view(pod, self.levels)
                if len(self._views) > 4 * len(self.pods) + 1000:
                    self._views.clear()
                self._views[(uid, rv)] = v
            return v
        v = self._views.get((uid, rv + "+" + a[1]))
        if v is None:
            spec = dict(pod.get("spec") or {}, nodeName=a[1])
            meta = dict(meta, annotations={**(meta.get("annotations") or {}), **a[2]})
            v = pod_view(dict(pod, spec=spec, metadata=meta), self.levels)
            self._views[(uid, rv + "+" + a[1])] = v
        return v

    def min_member(self, namespace: str, group: str) -> int | None:
        """``spec.minMember`` of the PodGroup object, or None without one."""
        pg = self.podgroups.get(f"{namespace}/{group}")
        if pg is None:
            return None
        v = (pg.get("spec") or {}).get("minMember")
        return v if isinstance(v, int) and not isinstance(v, bool) else -1


__all__ = ["Cache"]
