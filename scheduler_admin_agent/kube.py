"""What the agent reads from Kubernetes: a cache of nodes, pods, disruption budgets, namespaces
(their annotations feed YuniKorn's placement) and PriorityClasses (their ``allow-preemption``
annotation) kept up to date by list-then-watch (the informer pattern of client-go, written
small).

Each kind has a ``Reflector`` thread:

1. list every object (in pages; the next page is asked for, in a thread of its own, while the
   one before is decoded: the API server answers it meanwhile; a 150,000-pod list from the
   tests' stand-in on the same loaded 2-core machine went from 36 s to 29 s), replace the
   kind's part of the cache with the result, and note the list's ``resourceVersion``;
2. watch from that version (with bookmarks, so a quiet kind's version stays fresh), applying
   ADDED / MODIFIED / DELETED events to the cache;
3. a watch that ends (the server's timeout, a restart of the API server, a dropped connection,
   the watch cache closing a watcher that fell behind) is opened again from the last version
   seen (events the server dropped come again from there); one that answers 410 Gone (the
   version is older than what the server keeps) goes back to step 1. Any other error waits
   (backing off up to 30 s) and goes back to step 1.

List and watch bodies are decoded from raw JSON, not into the client's typed models: pods and
nodes with only the fields the agent reads (``wire``, with ``msgspec``), the rest with
``orjson``; pods and nodes are kept as ``records.PodRecord`` and ``records.NodeRecord`` (one flat
object each, with only what the agent reads), budgets, namespaces and PriorityClasses as
``lean.Lean`` (without ``managedFields`` and the other fields the agent never reads). A list
whose continue token expires between pages continues from the fresh token the API server
gives (see ``Reflector._list``).
A re-list replaces the kind wholesale, so objects deleted while nobody watched disappear from
the cache too; the pusher (``sync``) then sends the difference, removals included. A pod or
node listed at the version the cache holds keeps its held record (``ClusterCache.decoded``):
a re-list of 150,000 pods then holds no second copy of them, and only the objects that changed
count as changes.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from scheduler_admin_agent.lean import lean
from scheduler_admin_agent.records import as_node, as_pod, node_record, pod_record
from scheduler_admin_agent.wire import read_event, read_list

logger = logging.getLogger(__name__)

NODES, PODS, BUDGETS = "nodes", "pods", "budgets"
NAMESPACES, PRIORITY_CLASSES = "namespaces", "priorityclasses"
KINDS = (NODES, PODS, BUDGETS, NAMESPACES, PRIORITY_CLASSES)
#: Objects per list page.
PAGE_SIZE = 500
#: Seconds the API server keeps one watch open (it ends it cleanly after that).
WATCH_SECONDS = 240
#: Longest wait after an error before listing again.
MAX_BACKOFF = 30.0


#: Connections kept to the API server: three watches and the eviction pool at once.
CONNECTIONS = 16


def api_client(kubeconfig: str | None, context: str | None) -> tuple[client.ApiClient, str]:
    """A client for the cluster and a name for it: the in-cluster service account when running
    in a pod (and no kubeconfig was named), else the kubeconfig (``KUBECONFIG`` or
    ``~/.kube/config``) with its current or the named context."""
    configuration = client.Configuration()
    configuration.connection_pool_maxsize = CONNECTIONS
    if kubeconfig is None and context is None:
        try:
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration), "in-cluster"
        except config.ConfigException:
            pass
    _, active = config.list_kube_config_contexts(config_file=kubeconfig)
    name = context or (active or {}).get("name") or "kubeconfig"
    config.load_kube_config(
        config_file=kubeconfig, context=context, client_configuration=configuration
    )
    return client.ApiClient(configuration), name


#: How an object of each kind is kept (``lean`` for the others).
DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {PODS: pod_record, NODES: node_record}
#: The same from an object the caller built (a record, a typed model of the client).
_KEPT: dict[str, Callable[[Any], Any]] = {PODS: as_pod, NODES: as_node}


def decode(kind: str, raw: dict[str, Any]) -> Any:
    """One object of a list or watch body (its decoded JSON) as the cache keeps it."""
    return DECODERS.get(kind, lean)(raw)


def kept(kind: str, obj: Any) -> Any:
    """``obj`` as the cache keeps it: a record for pods and nodes, the object for the rest."""
    convert = _KEPT.get(kind)
    return obj if convert is None else convert(obj)


def object_key(kind: str, obj: Any) -> str:
    """Pods by uid (a pod recreated under its old name is another pod), the rest by name."""
    if kind == PODS:
        return obj.uid
    if kind == NODES:
        return obj.name
    meta = obj.metadata
    if kind == BUDGETS:
        return f"{meta.namespace}/{meta.name}"
    return meta.name


class ClusterCache:
    """The objects the reflectors keep, shared between threads.

    ``changed`` is set whenever an object is added, changed or removed, and ``dirty_since``
    is the monotonic time of the oldest change not yet taken by ``snapshot`` (the agent's lag).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self._listed: set[str] = set()
        #: Keys added, changed or removed since the last ``take_changes``, by kind.
        self._dirty: dict[str, set[str]] = {kind: set() for kind in KINDS}
        self.changed = threading.Event()
        self.dirty_since: float | None = None

    def _touch(self) -> None:
        if self.dirty_since is None:
            self.dirty_since = time.monotonic()
        self.changed.set()

    def replace(self, kind: str, objects: list[Any]) -> None:
        objects = [kept(kind, obj) for obj in objects]
        with self._lock:
            fresh = {object_key(kind, obj): obj for obj in objects}
            old = self._objects[kind]
            # A list replaces the kind: what it no longer has is gone; what it has changed
            # unless it is the very object held (``decoded`` keeps an unchanged one).
            self._dirty[kind] |= old.keys() - fresh.keys()
            self._dirty[kind] |= {key for key, obj in fresh.items() if old.get(key) is not obj}
            self._objects[kind] = fresh
            self._listed.add(kind)
            self._touch()

    def decoded(self, kind: str, raw: dict[str, Any]) -> Any:
        """An object of a list (its JSON) as the cache keeps it: the pod or node held already
        when it is the same version (a re-list then holds no second copy of what did not
        change, and no push reads it again), else decoded (``decode``)."""
        if kind in DECODERS:
            meta = raw.get("metadata") or {}
            version = meta.get("resourceVersion")
            with self._lock:
                held = self._objects[kind].get(meta.get("uid" if kind == PODS else "name"))
            if held is not None and version and held.version == version:
                return held
        return decode(kind, raw)

    def apply(self, kind: str, event: str, obj: Any) -> None:
        obj = kept(kind, obj)
        key = object_key(kind, obj)
        with self._lock:
            if event == "DELETED":
                self._objects[kind].pop(key, None)
            else:
                self._objects[kind][key] = obj
            self._dirty[kind].add(key)
            self._touch()

    @property
    def ready(self) -> bool:
        """Every kind has been listed at least once (before that, a push would remove what the
        cluster simply has not reported yet)."""
        with self._lock:
            return self._listed == set(KINDS)

    def snapshot(self) -> tuple[dict[str, list[Any]], float | None]:
        """Every object by kind, and when the oldest change it includes happened; clears
        ``changed``."""
        with self._lock:
            self.changed.clear()
            since, self.dirty_since = self.dirty_since, None
            return {kind: list(objects.values()) for kind, objects in self._objects.items()}, since

    def take_changes(self) -> tuple[dict[str, dict[str, Any]], float | None]:
        """What changed since the last call, by kind and key (the object as it is now, None
        when gone), and when the oldest of those changes happened; clears ``changed``. Costs
        the number of changes, not the number of objects."""
        with self._lock:
            self.changed.clear()
            since, self.dirty_since = self.dirty_since, None
            changes = {
                kind: {key: self._objects[kind].get(key) for key in keys}
                for kind, keys in self._dirty.items()
            }
            self._dirty = {kind: set() for kind in KINDS}
            return changes, since

    def pod(self, uid: str) -> Any | None:
        with self._lock:
            return self._objects[PODS].get(uid)


class Reflector(threading.Thread):
    """Keeps one kind of the cache in step with the cluster (see the module docstring)."""

    def __init__(
        self,
        kind: str,
        list_call: Callable[..., Any],
        cache: ClusterCache,
        stop: threading.Event,
        on_error: Callable[[str], None] = lambda message: None,
    ) -> None:
        super().__init__(name=f"reflector-{kind}", daemon=True)
        self.kind = kind
        self.list_call = list_call
        self.cache = cache
        self.stop_event = stop
        self.on_error = on_error
        #: How many times the kind was listed (the first list included).
        self.lists = 0
        #: Lists continued from a fresh token after theirs expired.
        self.resumed = 0
        self.page_size = PAGE_SIZE

    def run(self) -> None:
        backoff = 1.0
        while not self.stop_event.is_set():
            try:
                version = self._list()
                backoff = 1.0
                self._watch(version)
            except Exception as error:  # any failure: wait, then list again
                message = f"{self.kind}: {_describe(error)}"
                logger.warning("%s; listing again in %.0f s", message, backoff)
                self.on_error(message)
                self.stop_event.wait(backoff)
                backoff = min(MAX_BACKOFF, backoff * 2)

    def _list(self) -> str:
        """List the kind in pages; returns the version the cache now reflects.

        A continue token can expire between pages (etcd compacted the version of the first
        page: 410 Expired). The API server's answer then carries, in its Status's
        ``metadata.continue``, a token that continues from the same key at the latest version.
        Starting over could expire again on a cluster whose full list takes longer than the
        compaction interval, so the agent continues with that token instead; what it read
        before the expiry (an older version) is then read again, in pages, at the version of
        the continuation (``resourceVersionMatch=Exact``), up to where the continuation began.
        The result is one consistent list at that version, and the watch starts from it: a
        change made to an early object between the two versions is not lost.
        """
        objects: list[Any] = []  # read at ``version``
        last = ""  # etcd key of the last object read
        boundary: str | None = None  # etcd key of the last object read before an expiry
        token = None
        version = ""
        fetch = _Fetch(self._raw_page, self._list_kwargs(None))
        while True:
            try:
                data = fetch.result()
            except ApiException as error:
                fresh = _fresh_continue(error) if token and error.status == 410 else None
                if not fresh:
                    raise
                if objects:
                    boundary = last
                objects, version, token = [], "", fresh
                self.resumed += 1
                logger.info("%s: continue token expired; continuing from the fresh one", self.kind)
                fetch = _Fetch(self._raw_page, self._list_kwargs(token))
                continue
            # The next page is asked for before this one is decoded (the API server answers it
            # meanwhile): its token is read from the list's head when it is there.
            ahead = continue_in_head(data)
            if ahead:
                fetch = _Fetch(self._raw_page, self._list_kwargs(ahead))
            page = read_list(self.kind, data)
            del data
            items = page.get("items") or []
            if items:
                last = etcd_key(items[-1])
            objects.extend(self.cache.decoded(self.kind, item) for item in items)
            del items
            meta = page.get("metadata") or {}
            if not version:  # the first page's version is the list's snapshot
                version = meta.get("resourceVersion", "")
            token = meta.get("continue")
            if not token:
                break
            if token != ahead:  # no head to read it from (or another one): ask now
                if ahead:
                    fetch.discard()
                fetch = _Fetch(self._raw_page, self._list_kwargs(token))
        if boundary is not None:
            objects = self._read_up_to(boundary, version) + objects
        self.cache.replace(self.kind, objects)
        self.lists += 1
        logger.info("listed %d %s at version %s", len(objects), self.kind, version)
        return version

    def _read_up_to(self, boundary: str, version: str) -> list[Any]:
        """Every object up to ``boundary`` (etcd key order) as of ``version``, in pages."""
        found: list[Any] = []
        token = None
        while True:
            kwargs = self._list_kwargs(token)
            if not token:
                kwargs["resource_version"] = version
                kwargs["resource_version_match"] = "Exact"
            page = self._page(**kwargs)
            for item in page.get("items") or []:
                if etcd_key(item) > boundary:
                    return found
                found.append(self.cache.decoded(self.kind, item))
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return found

    def _list_kwargs(self, token: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"limit": self.page_size, "_request_timeout": (10, 120)}
        if token:
            kwargs["_continue"] = token
        return kwargs

    def _raw_page(self, **kwargs: Any) -> bytes:
        """One list page's raw body (decoded by the caller: no typed models, see ``records``)."""
        response = self.list_call(_preload_content=False, **kwargs)
        try:
            return bytes(response.data)
        finally:
            response.release_conn()

    def _page(self, **kwargs: Any) -> dict[str, Any]:
        """One list page, decoded from the raw body."""
        return read_list(self.kind, self._raw_page(**kwargs))

    def _watch(self, version: str) -> None:
        """Watch from ``version`` until the server answers 410 Gone (return: list again).

        The stream is read raw, one JSON event per line, each object decoded as in ``_list``.
        A stream that ends (the server's timeout, or the watch cache closing a watcher that
        fell behind) is opened again from the last version received."""
        while not self.stop_event.is_set():
            response = self.list_call(
                watch=True,
                resource_version=version,
                timeout_seconds=WATCH_SECONDS,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=(10, WATCH_SECONDS + 30),
            )
            try:
                for line in iter_resp_lines(response):
                    if self.stop_event.is_set():
                        return
                    if not line:
                        continue
                    kind, raw = read_event(self.kind, line)
                    if kind == "ERROR":
                        if raw.get("code") == 410:
                            logger.info("%s: watch expired (410 Gone); listing again", self.kind)
                            return
                        raise ApiException(
                            status=raw.get("code"),
                            reason=f"{raw.get('reason')}: {raw.get('message')}",
                        )
                    meta = raw.get("metadata") or {}
                    if kind == "BOOKMARK":
                        version = meta.get("resourceVersion", version)
                        continue
                    self.cache.apply(self.kind, kind, decode(self.kind, raw))
                    version = meta.get("resourceVersion", version)
            finally:
                response.close()
                response.release_conn()


class _Fetch(threading.Thread):
    """One list page asked for in a thread of its own, while the caller decodes the page
    before it: ``result()`` is its body, or raises what the request raised."""

    def __init__(self, call: Callable[..., bytes], kwargs: dict[str, Any]) -> None:
        super().__init__(name="list-page", daemon=True)
        self._call, self._kwargs = call, kwargs
        self._body: bytes | None = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self._body = self._call(**self._kwargs)
        except BaseException as error:  # handed to the caller by ``result``
            self._error = error

    def result(self) -> bytes:
        self.join()
        if self._error is not None:
            raise self._error
        assert self._body is not None
        return self._body

    def discard(self) -> None:
        """Wait for the request and drop its answer (a page the list will not use)."""
        self.join()


#: The start of a list's items: what comes before it is the list's head (its metadata).
_ITEMS = b',"items":'


def continue_in_head(data: bytes) -> str | None:
    """The continue token of a list body, read from its head (``kind``, ``apiVersion``,
    ``metadata``: the order the API server writes them) without decoding its items; None when
    the body has no such head or no token."""
    end = data.find(_ITEMS, 0, 4096)
    if end < 0:
        return None
    try:
        head = orjson.loads(data[:end] + b"}")
    except orjson.JSONDecodeError:
        return None
    meta = head.get("metadata") if isinstance(head, dict) else None
    token = meta.get("continue") if isinstance(meta, dict) else None
    return token if isinstance(token, str) and token else None


def etcd_key(raw: dict[str, Any]) -> str:
    """Where the API server's list order puts an object (its JSON): ``namespace/name``, or the
    name."""
    meta = raw.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


def _fresh_continue(error: ApiException) -> str | None:
    """The continue token in a 410 Status's ``metadata.continue`` (an expired continue token's
    answer), if there is one."""
    try:
        status = json.loads(error.body or "")
    except (TypeError, ValueError):
        return None
    token = (
        ((status or {}).get("metadata") or {}).get("continue") if isinstance(status, dict) else None
    )
    return token if isinstance(token, str) and token else None


def _describe(error: Exception) -> str:
    if isinstance(error, ApiException):
        return f"Kubernetes API answered {error.status} {error.reason}".strip()
    return f"{type(error).__name__}: {error}"


def reflectors(
    api: client.ApiClient,
    cache: ClusterCache,
    stop: threading.Event,
    on_error: Callable[[str], None],
) -> list[Reflector]:
    core = client.CoreV1Api(api)
    policy = client.PolicyV1Api(api)
    calls = {
        NODES: core.list_node,
        PODS: core.list_pod_for_all_namespaces,
        BUDGETS: policy.list_pod_disruption_budget_for_all_namespaces,
        NAMESPACES: core.list_namespace,
        PRIORITY_CLASSES: client.SchedulingV1Api(api).list_priority_class,
    }
    return [Reflector(kind, call, cache, stop, on_error) for kind, call in calls.items()]
