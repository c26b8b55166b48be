"""The API server, through the official ``kubernetes`` client: lists, watches, writes.

Objects travel as the API's JSON (plain dicts): responses are read with
``_preload_content=False`` and parsed once, never turned into the client's
model classes.  Every call made by the scheduler's loop is counted and timed
(`Api.calls`, `Api.spent`), so a cycle can report the API server's share.

Watches (`Watcher`) run one thread per kind: a list, then a watch from the
list's ``resourceVersion`` (with bookmarks); a watch that ends or breaks is
resumed from the last ``resourceVersion`` seen, after a backoff
(0.1 s doubling to 5 s); a ``410 Gone`` (the version is too old) lists
again.  Nothing is polled.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

KINDS = ("nodes", "pods", "podgroups")
PODGROUP = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")


class ApiError(Exception):
    """A failed call: ``status`` (HTTP code, 0 when the server was not
    reached) and one line of message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error(exc: BaseException, what: str) -> ApiError:
    status = int(getattr(exc, "status", 0) or 0)
    body = getattr(exc, "body", None)
    msg = ""
    if body:
        try:
            msg = json.loads(body).get("message", "")
        except (ValueError, AttributeError):
            msg = str(body)[:200]
    return ApiError(status, f"{what}: {status or type(exc).__name__} "
                            f"{msg or getattr(exc, 'reason', '') or exc}".strip())


#: Connections kept open to the API server (bindings go out in parallel).
POOL = 32


def load_client(kubeconfig: str | None = None, context: str | None = None):
    """An ``ApiClient`` for the kubeconfig (None: ``$KUBECONFIG`` or
    ``~/.kube/config``, else the in-cluster service account)."""
    from kubernetes import client, config
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    else:
        try:
            config.load_kube_config(context=context, client_configuration=cfg)
        except Exception:
            config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = POOL
    return client.ApiClient(cfg)


class Api:
    """The calls the scheduler makes, counted and timed (`calls`; `spent`: the
    seconds of every thread's calls added up; `thread_spent`: the calling thread's).

    Parameters
    ----------
    kubeconfig : str, optional
        Path of a kubeconfig (default: ``$KUBECONFIG``, ``~/.kube/config`` or in-cluster).
    component : str
        The reporting component of Events.
    """

    def __init__(self, kubeconfig: str | None = None, *, context: str | None = None,
                 component: str = "alloc"):
        from kubernetes import client
        self.kubeconfig, self.context = kubeconfig, context
        self.api_client = load_client(kubeconfig, context)
        self.core = client.CoreV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)
        self.component = component
        self.calls: dict[str, int] = {}
        self.spent = 0.0
        self._lock = threading.Lock()
        self._mine = threading.local()

    def _call(self, verb: str, fn: Callable[[], Any], what: str) -> Any:
        t0 = time.perf_counter()
        try:
            r = fn()
            data = r.data if hasattr(r, "data") else r
            if hasattr(r, "read") and not data:
                data = r.read()
            return json.loads(data) if data else {}
        except Exception as exc:
            raise _error(exc, what) from None
        finally:
            dt = time.perf_counter() - t0
            self._mine.spent = getattr(self._mine, "spent", 0.0) + dt
            with self._lock:
                self.spent += dt
                self.calls[verb] = self.calls.get(verb, 0) + 1

    @property
    def thread_spent(self) -> float:
        """Seconds spent in calls by the calling thread."""
        return float(getattr(self._mine, "spent", 0.0))

    @property
    def total_calls(self) -> int:
        """Calls made so far."""
        return sum(self.calls.values())

    # ------------------------------------------------------------- reading
    def list(self, kind: str) -> tuple[list[dict], str]:
        """Every object of a kind, and the list's ``resourceVersion``.

        ``podgroups`` gives ``([], "")`` when the PodGroup CRD is absent."""
        if kind == "nodes":
            out = self._call("list", lambda: self.core.list_node(_preload_content=False), "list nodes")
        elif kind == "pods":
            out = self._call("list", lambda: self.core.list_pod_for_all_namespaces(
                _preload_content=False), "list pods")
        else:
            try:
                out = self._call("list", lambda: self.custom.list_cluster_custom_object(
                    *PODGROUP, _preload_content=False), "list podgroups")
            except ApiError as exc:
                if exc.status == 404:
                    return [], ""
                raise
        return list(out.get("items") or ()), (out.get("metadata") or {}).get("resourceVersion", "")

    def watch(self, kind: str, rv: str, timeout: int = 300) -> Iterator[dict]:
        """Events of a kind after ``rv`` (``{"type", "object"}``), until the
        server ends the watch (``timeout`` seconds at most)."""
        from kubernetes.watch.watch import iter_resp_lines
        kw: dict[str, Any] = dict(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                  timeout_seconds=timeout, _preload_content=False)
        resp: Any
        try:
            if kind == "nodes":
                resp = self.core.list_node(**kw)
            elif kind == "pods":
                resp = self.core.list_pod_for_all_namespaces(**kw)
            else:
                resp = self.custom.list_cluster_custom_object(*PODGROUP, **kw)
        except Exception as exc:
            raise _error(exc, f"watch {kind}") from None
        try:
            for line in iter_resp_lines(resp):
                if line:
                    yield json.loads(line)
        except Exception as exc:
            raise _error(exc, f"watch {kind}") from None
        finally:
            resp.close()
            resp.release_conn()

    def get_pod(self, namespace: str, name: str) -> dict | None:
        """The pod now, or None when it is gone."""
        try:
            return self._call("get", lambda: self.core.read_namespaced_pod(
                name, namespace, _preload_content=False), f"get pod {namespace}/{name}")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    # ------------------------------------------------------------- writing
    def bind(self, namespace: str, name: str, uid: str, node: str,
             annotations: dict[str, str]) -> None:
        """Bind the pod to the node (``pods/binding``); the annotations land on the pod."""
        body: Any = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": uid,
                             "annotations": annotations},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        self._call("bind", lambda: self.core.create_namespaced_pod_binding(
            name, namespace, body, _preload_content=False), f"bind pod {namespace}/{name} to {node}")

    def delete_pod(self, namespace: str, name: str, uid: str, grace: int | None = None) -> None:
        """Delete the pod (this uid only); a pod already gone is not an error."""
        body: Any = {"apiVersion": "v1", "kind": "DeleteOptions",
                                "preconditions": {"uid": uid}}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        try:
            self._call("delete", lambda: self.core.delete_namespaced_pod(
                name, namespace, body=body, _preload_content=False),
                f"delete pod {namespace}/{name}")
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise

    def event(self, obj: dict, kind: str, etype: str, reason: str, message: str) -> None:
        """Record an Event on the object (``etype``: Normal or Warning)."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        now = datetime.now(timezone.utc)
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        body: Any = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta.get('name', 'x')}.{time.time_ns():x}", "namespace": ns},
            "involvedObject": {"kind": kind, "name": meta.get("name"), "namespace": ns,
                               "uid": meta.get("uid"),
                               "apiVersion": obj.get("apiVersion") or "v1"},
            "type": etype, "reason": reason, "message": message[:1024],
            "source": {"component": self.component},
            "reportingComponent": self.component, "reportingInstance": self.component,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }
        self._call("event", lambda: self.core.create_namespaced_event(
            ns, body, _preload_content=False), f"event on {kind} {ns}/{meta.get('name')}")


class EventSink:
    """Events written by a thread of their own, so that a cycle never waits for them.

    `close` waits until every event queued is written (or failed: one log line each).
    """

    def __init__(self, api: Api, log: Callable[[str], None] | None = None):
        self.api = api
        self.queue: queue.Queue = queue.Queue()
        self.failed = 0
        self._log = log or (lambda line: None)
        self._thread = threading.Thread(target=self._run, daemon=True, name="alloc-events")
        self._thread.start()

    def put(self, obj: dict, kind: str, etype: str, reason: str, message: str) -> None:
        """Queue an Event (as `Api.event`)."""
        self.queue.put((obj, kind, etype, reason, message))

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is None:
                    return
                try:
                    self.api.event(*item)
                except ApiError as exc:
                    self.failed += 1
                    self._log(f"{exc}; event dropped")
            finally:
                self.queue.task_done()

    def flush(self) -> None:
        """Wait until the events queued so far are written."""
        self.queue.join()

    def close(self) -> None:
        """Write what is queued, then end the thread."""
        self.queue.put(None)
        self._thread.join(60)


class Watcher:
    """List-then-watch of each kind in its own thread; events into one queue.

    The queue carries ``("list", kind, items)`` after each (re)list and
    ``("event", kind, {"type", "object"})`` for each change, in the order the
    server sent them for that kind.  ``errors`` counts broken watches,
    ``relists`` the lists after a ``410 Gone``.
    """

    def __init__(self, api: Api, kinds: tuple[str, ...] = KINDS, *, timeout: int = 300,
                 log: Callable[[str], None] | None = None):
        self.api, self.kinds, self.timeout = api, kinds, timeout
        self.queue: queue.Queue = queue.Queue()
        self.rv: dict[str, str] = {}
        self.errors = 0
        self.relists = 0
        self.synced = {k: threading.Event() for k in kinds}
        self._stop = threading.Event()
        self._log = log or (lambda line: None)
        self._threads = [threading.Thread(target=self._run, args=(k,), daemon=True,
                                          name=f"alloc-watch-{k}") for k in kinds]

    def start(self) -> "Watcher":
        """Start the threads."""
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        """Ask the threads to end (each ends at its watch's next line or timeout)."""
        self._stop.set()

    def wait_synced(self, timeout: float) -> bool:
        """True once every kind has been listed."""
        end = time.monotonic() + timeout
        return all(e.wait(max(0.0, end - time.monotonic())) for e in self.synced.values())

    def _relist(self, kind: str) -> None:
        items, rv = self.api.list(kind)
        self.rv[kind] = rv
        self.queue.put(("list", kind, items))
        self.synced[kind].set()

    def _run(self, kind: str) -> None:
        backoff = 0.1
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relist(kind)
                    need_list = False
                    if kind == "podgroups" and not self.rv.get(kind):
                        return              # no PodGroup CRD: nothing to watch
                for ev in self.api.watch(kind, self.rv[kind], self.timeout):
                    if self._stop.is_set():
                        return
                    t = ev.get("type")
                    obj = ev.get("object") or {}
                    if t == "ERROR":
                        if obj.get("code") == 410:
                            self.relists += 1
                            need_list = True
                            break
                        raise ApiError(int(obj.get("code") or 0), str(obj.get("message")))
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self.rv[kind] = rv
                    if t != "BOOKMARK":
                        self.queue.put(("event", kind, ev))
                backoff = 0.1
            except ApiError as exc:
                self.errors += 1
                if exc.status == 410:
                    self.relists += 1
                    need_list = True
                self._log(f"watch {kind}: {exc}; resumed in {backoff:.1f} s")
                self._stop.wait(backoff)
                backoff = min(5.0, backoff * 2)


__all__ = ["Api", "ApiError", "EventSink", "KINDS", "PODGROUP", "POOL", "Watcher", "load_client"]
