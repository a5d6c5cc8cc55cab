"""``ClusterState``: the fake API server's storage and REST semantics, without the HTTP.

Objects by resource and key, one global resource version, a bounded event history, the open
watches, and the verbs (list, watch, get, create, replace, patch, delete, evict) with the real
API server's rules; ``server.FakeKubeAPI`` serves them over HTTP and its module docstring lists
what is reproduced and what is not. Everything runs under one lock; stored objects are never
mutated (a write stores a new dict), so a reader may serialise what it got after releasing it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import copy
import heapq
import itertools
import json
import queue
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from tests.support.kube import patches
from tests.support.kube.fixtures.pods import qos_class
from tests.support.kube.resources import (
    CONTINUE_EXPIRED,
    NAMESPACE_MISMATCH,
    NODES,
    PDBS,
    PODS,
    REASONS,
    RESOURCES,
    ApiError,
    Key,
    Obj,
    ResourceType,
    already_exists,
    bad_request,
    conflict,
    expired,
    invalid,
    key_of,
    not_found,
    now_timestamp,
    precondition_failed,
    resource_for,
    sort_key,
    status_details,
    too_large,
)
from tests.support.kube.selectors import (
    FieldRequirement,
    Selector,
    SelectorError,
    fields_match,
    from_label_selector,
    matches,
    parse_field_selector,
    parse_label_selector,
)


class EvictionRecord(NamedTuple):
    """An accepted eviction (201). ``disrupted`` is False when the pod was already terminating,
    pending or finished, so the eviction changed nothing a budget counts."""

    namespace: str
    name: str
    uid: str
    disrupted: bool
    budget: str | None  # "namespace/name" of the budget that was decremented


@dataclass(frozen=True)
class Event:
    rv: int
    resource: ResourceType
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj  # the object after the change (DELETED: its last state, at the deletion's version)
    old: Obj | None  # the object before (MODIFIED, DELETED)


END = "END"


@dataclass(eq=False)
class Watcher:
    resource: ResourceType
    namespace: str | None
    labels: Selector
    fields: tuple[FieldRequirement, ...]
    bookmarks: bool
    items: queue.SimpleQueue[tuple[Any, ...]] = field(default_factory=queue.SimpleQueue)

    def selects(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return matches(self.labels, meta.get("labels")) and fields_match(
            self.fields, self.resource.plural, obj
        )

    def translate(self, event: Event) -> tuple[str, Obj] | None:
        """The event this watcher sees, if any (selector transitions become ADDED/DELETED)."""
        if event.resource is not self.resource:
            return None
        if event.type == "ADDED":
            return ("ADDED", event.obj) if self.selects(event.obj) else None
        if event.type == "DELETED":
            return ("DELETED", event.obj) if self.selects(event.obj) else None
        now, before = self.selects(event.obj), event.old is not None and self.selects(event.old)
        if now and before:
            return ("MODIFIED", event.obj)
        if now:
            return ("ADDED", event.obj)
        if before:
            return ("DELETED", event.obj)
        return None


@dataclass
class WatchPlan:
    watcher: Watcher
    initial: list[tuple[Any, ...]]
    timeout: float | None


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise bad_request(
            f'{name}: Invalid value: "{raw}": strconv.ParseInt: parsing "{raw}": invalid syntax'
        ) from None


def _parse_rv(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(
            f'resourceVersion: Invalid value: "{raw}": strconv.ParseUint: parsing "{raw}": '
            "invalid syntax"
        ) from None
    if value < 0:
        raise bad_request(
            f'resourceVersion: Invalid value: "{raw}": must be a non-negative integer'
        )
    return value


def _encode_continue(rv: int, start: str) -> str:
    token = json.dumps(
        {"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"}, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if raw.get("v") != "meta.k8s.io/v1" or not isinstance(raw.get("rv"), int):
            raise ValueError("unknown continue token version")
        return raw["rv"], str(raw["start"])
    except (ValueError, binascii.Error, KeyError, TypeError, AttributeError) as error:
        raise bad_request(f"continue key is not valid: {error}") from None


def _strip_type(obj: Obj) -> Obj:
    """A list item as the API server serves it: no ``kind`` or ``apiVersion``."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _pod_ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions", [])
    )


class ClusterState:
    """The objects and watches of a fake API server, and its verbs (see the module docstring).

    ``grace_seconds``: how long a gracefully deleted (or evicted) pod stays terminating before
    it is removed (None: until ``reap()``). ``history_limit``: events kept for watches and paged
    lists (older versions answer 410). ``watch_timeout``: seconds after which a watch without
    ``timeoutSeconds`` ends (None: never).
    """

    def __init__(
        self,
        *,
        grace_seconds: float | None = 0.2,
        history_limit: int = 50_000,
        watch_timeout: float | None = None,
    ) -> None:
        self.grace_seconds = grace_seconds
        self.watch_timeout = watch_timeout
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[ResourceType, dict[Key, Obj]] = {r: {} for r in RESOURCES.values()}
        self._history: list[Event] = []
        self._history_limit = history_limit
        self._floor = 0  # every event with rv > floor is in the history
        self._watchers: set[Watcher] = set()
        self._evictions: list[EvictionRecord] = []
        self._reaper_due: list[tuple[float, int, Key, str]] = []
        self._reaper_seq = itertools.count()
        self._reaper_wake = threading.Condition(self._lock)
        self._reaper: threading.Thread | None = None
        self._stopping = False

    def start_reaper(self) -> None:
        """Start removing terminating pods once their ``grace_seconds`` have passed."""
        with self._lock:
            self._stopping = False
        self._reaper = threading.Thread(
            target=self._reap_loop, name="fake-kube-reaper", daemon=True
        )
        self._reaper.start()

    def stop_reaper(self) -> None:
        with self._lock:
            self._stopping = True
            self._reaper_wake.notify_all()
        if self._reaper is not None:
            self._reaper.join(timeout=5)
            self._reaper = None

    # --- test-facing state API

    @property
    def resource_version(self) -> int:
        """The current global resource version."""
        with self._lock:
            return self._rv

    def load(self, objects: Mapping[str, Any] | Iterable[Obj]) -> None:
        """Add every object of a ``fixtures.cluster()`` dict, a kubectl List, or an iterable."""
        if isinstance(objects, Mapping):
            if objects.get("kind") == "List":
                items: Iterable[Obj] = objects["items"]
            else:
                items = [
                    item
                    for key in ("nodes", "pdbs", "configmaps", "pods")
                    for item in objects.get(key, [])
                ]
        else:
            items = objects
        with self._lock:
            for item in items:
                self.add(item)

    def add(self, obj: Mapping[str, Any]) -> Obj:
        """Create an object as a controller would (ADDED); returns the stored copy."""
        resource = resource_for(obj["kind"])
        stored = copy.deepcopy(dict(obj))
        meta = stored.setdefault("metadata", {})
        if resource.namespaced and not meta.get("namespace"):
            raise ValueError(f"a {resource.kind} needs metadata.namespace")
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_timestamp())
        with self._lock:
            if key_of(resource, stored) in self._objects[resource]:
                raise ValueError(
                    f"{resource.kind} {sort_key(key_of(resource, stored))} already exists"
                )
            return copy.deepcopy(self._commit(resource, "ADDED", stored, None))

    def update(self, obj: Mapping[str, Any]) -> Obj:
        """Replace an object whole, status included, as a controller or kubelet would (MODIFIED)."""
        resource = resource_for(obj["kind"])
        stored = copy.deepcopy(dict(obj))
        with self._lock:
            key = key_of(resource, stored)
            old = self._objects[resource].get(key)
            if old is None:
                raise KeyError(f"{resource.kind} {sort_key(key)} does not exist")
            meta = stored["metadata"]
            meta.setdefault("uid", old["metadata"]["uid"])
            meta.setdefault("creationTimestamp", old["metadata"]["creationTimestamp"])
            return copy.deepcopy(self._commit(resource, "MODIFIED", stored, old))

    def edit(
        self, kind: str, name: str, fn: Callable[[Obj], object], namespace: str | None = None
    ) -> Obj:
        """Change an object with ``fn``: it edits the copy it gets (or returns a new dict)."""
        resource = resource_for(kind)
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise KeyError(f"{resource.kind} {namespace}/{name} does not exist")
            draft = copy.deepcopy(old)
            result = fn(draft)
            return self.update(result if isinstance(result, dict) else draft)

    def delete(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """Remove an object at once (DELETED), as after a forced deletion; None if absent."""
        resource = resource_for(kind)
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                return None
            return copy.deepcopy(self._commit(resource, "DELETED", copy.deepcopy(old), old))

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """A copy of the stored object, or None."""
        resource = resource_for(kind)
        with self._lock:
            found = self._get(resource, namespace, name)
        return copy.deepcopy(found) if found is not None else None

    def objects(self, kind: str, namespace: str | None = None) -> list[Obj]:
        """Copies of every stored object of ``kind`` (in ``namespace``), in etcd key order."""
        resource = resource_for(kind)
        with self._lock:
            items = sorted(self._objects[resource].items(), key=lambda kv: sort_key(kv[0]))
        return [
            copy.deepcopy(obj) for key, obj in items if namespace is None or key[0] == namespace
        ]

    def set_pdb_allowed(self, namespace: str, name: str, allowed: int) -> Obj:
        """Set a budget's ``status.disruptionsAllowed`` (and its condition), as the disruption
        controller does when pods become healthy or not."""

        def change(budget: Obj) -> None:
            status = budget.setdefault("status", {})
            status["disruptionsAllowed"] = allowed
            current = status.get("currentHealthy", allowed)
            status["desiredHealthy"] = max(current - allowed, 0)
            _set_disruption_condition(status)

        return self.edit("PodDisruptionBudget", name, change, namespace)

    def edit_configmap(self, namespace: str, name: str, fn: Callable[[Obj], object]) -> Obj:
        """A concurrent writer's change to a ConfigMap (bumps its resourceVersion, MODIFIED)."""
        return self.edit("ConfigMap", name, fn, namespace)

    # --- test-facing watch controls

    @property
    def watch_count(self) -> int:
        """The number of open watch streams."""
        with self._lock:
            return len(self._watchers)

    def wait_for_watches(self, count: int, timeout: float = 10.0, kind: str | None = None) -> None:
        """Block until at least ``count`` watch streams (of ``kind``) are open."""
        resource = resource_for(kind) if kind else None
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                open_now = sum(
                    1 for w in self._watchers if resource is None or w.resource is resource
                )
            if open_now >= count:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{open_now} watch streams open after {timeout}s, waited for {count}"
                )
            time.sleep(0.01)

    def end_watches(self, *, abrupt: bool = False) -> int:
        """End every open watch stream: cleanly (terminating chunk, as a server-side timeout does)
        or ``abrupt`` (connection cut mid-stream, as an API server crash). Returns how many."""
        with self._lock:
            watchers = list(self._watchers)
            for watcher in watchers:
                watcher.items.put((END, abrupt))
            self._watchers.clear()
        return len(watchers)

    def compact(self) -> int:
        """Forget the event history (as etcd compaction does): a watch or paged list from an older
        resourceVersion answers 410 Expired. Returns the new oldest usable version."""
        with self._lock:
            self._history.clear()
            self._floor = self._rv
            return self._floor

    def send_bookmarks(self) -> int:
        """Send a BOOKMARK now on every open watch that allows them. Returns how many."""
        with self._lock:
            watchers = [w for w in self._watchers if w.bookmarks]
            for watcher in watchers:
                self._bookmark(watcher)
        return len(watchers)

    def terminate(self, namespace: str, name: str, grace_period: int | None = None) -> Obj:
        """Delete a pod gracefully, as its owner or ``kubectl delete`` would (the same path as an
        HTTP DELETE): terminating now, removed ``grace_seconds`` later (at once if unbound)."""
        with self._lock:
            pod = self._get(PODS, namespace, name)
            if pod is None:
                raise KeyError(f"Pod {namespace}/{name} does not exist")
            return copy.deepcopy(self._delete_pod(pod, grace_period))

    def reap(self) -> int:
        """Remove every terminating pod now (as the kubelet finishing), not after grace_seconds;
        pods loaded already terminating (e.g. from ``cluster()``) are only removed this way."""
        with self._lock:
            due = list(self._reaper_due)
            self._reaper_due.clear()
            removed = sum(1 for _, _, key, uid in due if self._finish_deletion(key, uid))
            for key, pod in list(self._objects[PODS].items()):
                if "deletionTimestamp" in pod["metadata"]:
                    removed += self._finish_deletion(key, pod["metadata"]["uid"])
        return removed

    # --- eviction records

    def evictions(self) -> list[tuple[str, str]]:
        """(namespace, name) of every accepted eviction (201), in order."""
        with self._lock:
            return [(e.namespace, e.name) for e in self._evictions]

    def eviction_log(self) -> list[EvictionRecord]:
        with self._lock:
            return list(self._evictions)

    # --- internals: the store

    def _commit(self, resource: ResourceType, kind: str, obj: Obj, old: Obj | None) -> Obj:
        """Store ``obj`` (a fresh dict) as the result of an ADDED/MODIFIED/DELETED write."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        key = key_of(resource, obj)
        if kind == "DELETED":
            self._objects[resource].pop(key, None)
        else:
            self._objects[resource][key] = obj
        event = Event(self._rv, resource, kind, obj, old)
        self._history.append(event)
        if len(self._history) > self._history_limit * 5 // 4:
            drop = len(self._history) - self._history_limit
            self._floor = self._history[drop - 1].rv
            del self._history[:drop]
        for watcher in self._watchers:
            seen = watcher.translate(event)
            if seen is not None:
                watcher.items.put(("EVENT", *seen))
        return obj

    def _events_after(self, rv: int) -> list[Event]:
        start = bisect.bisect_right(self._history, rv, key=lambda e: e.rv)
        return self._history[start:]

    def _snapshot(self, resource: ResourceType, rv: int) -> dict[Key, Obj]:
        """The objects of ``resource`` at version ``rv`` (>= floor), rebuilt from the history."""
        current = self._objects[resource]
        if rv >= self._rv:
            return dict(current)
        state = dict(current)
        for event in reversed(self._events_after(rv)):
            if event.resource is not resource:
                continue
            key = key_of(resource, event.obj)
            if event.type == "ADDED":
                state.pop(key, None)
            elif event.old is not None:
                state[key] = event.old
        return state

    def _bookmark(self, watcher: Watcher, annotations: Mapping[str, str] | None = None) -> None:
        """Queue a bookmark behind every event already queued for ``watcher``."""
        with self._lock:
            watcher.items.put(("BOOKMARK", self._rv, dict(annotations or {})))

    def _get(self, resource: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self._objects[resource].get((namespace or "" if resource.namespaced else "", name))

    # --- verbs: reads

    def rest_get(self, resource: ResourceType, namespace: str | None, name: str) -> Obj:
        with self._lock:
            found = self._get(resource, namespace, name)
        if found is None:
            raise not_found(resource, name)
        return found

    def _selectors(
        self, resource: ResourceType, query: Mapping[str, str]
    ) -> tuple[Selector, tuple[FieldRequirement, ...]]:
        try:
            return (
                parse_label_selector(query.get("labelSelector")),
                parse_field_selector(query.get("fieldSelector"), resource.plural),
            )
        except SelectorError as error:
            raise bad_request(str(error)) from None

    def rest_list(
        self, resource: ResourceType, namespace: str | None, query: Mapping[str, str]
    ) -> Obj:
        labels, fields = self._selectors(resource, query)
        limit = _int_param(query, "limit") or 0
        token = query.get("continue") or ""
        requested = query.get("resourceVersion") or ""
        start = ""
        with self._lock:
            if token:
                if requested:
                    raise bad_request(
                        "specifying resource version is not allowed when using continue"
                    )
                at, start = _decode_continue(token)
                if at < self._floor:
                    raise expired(CONTINUE_EXPIRED)
            elif requested and requested != "0":
                wanted = _parse_rv(requested)
                if wanted > self._rv:
                    raise too_large(wanted, self._rv)
                if query.get("resourceVersionMatch") == "Exact":
                    if wanted < self._floor:
                        raise expired(f"too old resource version: {wanted} ({self._floor})")
                    at = wanted
                else:
                    at = self._rv
            else:
                at = self._rv
            state = self._snapshot(resource, at)
        keys = sorted(state, key=sort_key)
        if start:
            keys = keys[bisect.bisect_left(keys, start, key=sort_key) :]
        selected: list[Obj] = []
        continue_token = ""
        remaining = 0
        for index, key in enumerate(keys):
            if namespace is not None and key[0] != namespace:
                continue
            obj = state[key]
            if labels and not matches(labels, obj["metadata"].get("labels")):
                continue
            if fields and not fields_match(fields, resource.plural, obj):
                continue
            if limit and len(selected) == limit:
                continue_token = _encode_continue(at, sort_key(key_of(resource, selected[-1])))
                if not labels and not fields:
                    remaining = sum(
                        1 for k in keys[index:] if namespace is None or k[0] == namespace
                    )
                break
            selected.append(obj)
        metadata: Obj = {"resourceVersion": str(at)}
        if continue_token:
            metadata["continue"] = continue_token
            if remaining:
                metadata["remainingItemCount"] = remaining
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": metadata,
            "items": [_strip_type(obj) for obj in selected],
        }

    def rest_watch(
        self, resource: ResourceType, namespace: str | None, query: Mapping[str, str]
    ) -> WatchPlan:
        labels, fields = self._selectors(resource, query)
        timeout = _int_param(query, "timeoutSeconds")
        bookmarks = truthy(query.get("allowWatchBookmarks"))
        send_initial = truthy(query.get("sendInitialEvents"))
        requested = query.get("resourceVersion") or ""
        watcher = Watcher(resource, namespace, labels, fields, bookmarks)
        initial: list[tuple[Any, ...]] = []
        with self._lock:
            if requested in ("", "0") or send_initial:
                state = self._objects[resource]
                for key in sorted(state, key=sort_key):
                    if watcher.selects(state[key]):
                        initial.append(("EVENT", "ADDED", state[key]))
                if send_initial and bookmarks:
                    initial.append(("BOOKMARK", self._rv, {"k8s.io/initial-events-end": "true"}))
            else:
                wanted = _parse_rv(requested)
                if wanted < self._floor:
                    error = expired(f"too old resource version: {wanted} ({self._floor})")
                    return WatchPlan(watcher, [("ERROR", error.status)], None)
                if wanted > self._rv:
                    return WatchPlan(watcher, [("ERROR", too_large(wanted, self._rv).status)], None)
                for event in self._events_after(wanted):
                    seen = watcher.translate(event)
                    if seen is not None:
                        initial.append(("EVENT", *seen))
            self._watchers.add(watcher)
        limit = float(timeout) if timeout else self.watch_timeout
        return WatchPlan(watcher, initial, limit)

    # --- verbs: writes

    def _body_object(self, resource: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise bad_request(f"the body of the request must be a {resource.kind} object")
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind is not None and kind != resource.kind:
            raise bad_request(
                f"the kind of the provided object ({kind}) does not match the resource "
                f"({resource.kind})"
            )
        if api_version is not None and api_version != resource.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({resource.api_version})"
            )
        obj = copy.deepcopy(body)
        obj["kind"], obj["apiVersion"] = resource.kind, resource.api_version
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        return obj

    def _check_namespace(self, resource: ResourceType, obj: Obj, namespace: str | None) -> None:
        meta = obj["metadata"]
        if not resource.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") not in (None, "", namespace):
            raise bad_request(NAMESPACE_MISMATCH)
        meta["namespace"] = namespace

    def rest_create(self, resource: ResourceType, namespace: str | None, body: Any) -> Obj:
        obj = self._body_object(resource, body)
        self._check_namespace(resource, obj, namespace)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise ApiError(
                500, "InternalError", "resourceVersion should not be set on objects to be created"
            )
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise invalid(
                    resource,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                )
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5)
            )
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_timestamp()
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(transient, None)
        if resource is PDBS:
            meta["generation"] = 1
            # PrepareForCreate clears the status; the disruption controller fills it in later.
            obj["status"] = {
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "disruptionsAllowed": 0,
                "expectedPods": 0,
            }
        if resource is NODES:
            obj["status"] = {}
        if resource is PODS:
            spec = obj.get("spec") or {}
            obj["status"] = {
                "phase": "Pending",
                "qosClass": qos_class(spec.get("containers", []), spec.get("initContainers", [])),
            }
        with self._lock:
            if key_of(resource, obj) in self._objects[resource]:
                raise already_exists(resource, meta["name"])
            return self._commit(resource, "ADDED", obj, None)

    def rest_replace(
        self, resource: ResourceType, namespace: str | None, name: str, body: Any
    ) -> tuple[int, Obj]:
        obj = self._body_object(resource, body)
        if obj["metadata"].get("name") != name:
            raise bad_request(
                f"the name of the object ({obj['metadata'].get('name')}) does not match the name "
                f"on the URL ({name})"
            )
        self._check_namespace(resource, obj, namespace)
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise not_found(resource, name)
            return 200, self._write_update(resource, old, obj)

    def _write_update(self, resource: ResourceType, old: Obj, new: Obj) -> Obj:
        """The common part of PUT and PATCH: preconditions, immutable fields, no-op detection."""
        meta, old_meta = new["metadata"], old["metadata"]
        name = old_meta["name"]
        requested = meta.get("resourceVersion")
        if requested and requested != old_meta["resourceVersion"]:
            raise conflict(resource, name)
        if meta.get("uid") not in (None, "", old_meta["uid"]):
            raise precondition_failed(resource, name, "UID", meta["uid"], old_meta["uid"])
        if meta.get("name") != name or (
            resource.namespaced and meta.get("namespace") != old_meta.get("namespace")
        ):
            raise invalid(resource, name, "metadata.name", "Invalid value: field is immutable")
        for kept in (
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        if resource.status_subresource:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        if resource is PODS and new.get("spec") != old.get("spec"):
            raise invalid(
                resource,
                name,
                "spec",
                "Forbidden: pod updates may not change fields other than "
                "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                "`spec.activeDeadlineSeconds`,`spec.tolerations` "
                "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)",
            )
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if new == old:
            return old
        return self._commit(resource, "MODIFIED", new, old)

    def rest_patch(
        self, resource: ResourceType, namespace: str | None, name: str, body: Any, content_type: str
    ) -> Obj:
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise not_found(resource, name)
            try:
                patched = patches.apply(content_type, copy.deepcopy(old), body)
            except patches.PatchError as error:
                raise ApiError(error.code, REASONS.get(error.code), str(error)) from None
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise ApiError(422, "Invalid", "the patched object is not a valid object")
            patched["kind"], patched["apiVersion"] = resource.kind, resource.api_version
            return self._write_update(resource, old, patched)

    def rest_delete(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        query: Mapping[str, str],
    ) -> Obj:
        options = body if isinstance(body, dict) else {}
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = _int_param(query, "gracePeriodSeconds")
        dry_run = bool(options.get("dryRun") or query.get("dryRun"))
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise not_found(resource, name)
            self._check_preconditions(resource, old, options)
            if dry_run:
                return old
            if resource is PODS:
                return self._delete_pod(old, grace)
            self._commit(resource, "DELETED", copy.deepcopy(old), old)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": status_details(resource, name, uid=old["metadata"]["uid"]),
        }

    def _check_preconditions(
        self, resource: ResourceType, obj: Obj, options: Mapping[str, Any]
    ) -> None:
        preconditions = options.get("preconditions") or {}
        meta = obj["metadata"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        name = meta["name"]
        if uid and uid != meta["uid"]:
            raise precondition_failed(resource, name, "UID", uid, meta["uid"])
        if rv and rv != meta["resourceVersion"]:
            raise precondition_failed(
                resource, name, "ResourceVersion", rv, meta["resourceVersion"]
            )

    def _delete_pod(self, pod: Obj, grace: int | None) -> Obj:
        """Graceful deletion (pkg/registry/core/pod/strategy.go CheckGracefulDelete): an unbound
        or finished pod, or grace 0, goes at once; otherwise it gets ``deletionTimestamp`` and
        is removed ``grace_seconds`` later. A pod already terminating is left as it is."""
        meta = pod["metadata"]
        if "deletionTimestamp" in meta:
            return pod
        spec, phase = pod.get("spec", {}), pod.get("status", {}).get("phase")
        period = grace if grace is not None else spec.get("terminationGracePeriodSeconds", 30)
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed") or period == 0:
            return self._commit(PODS, "DELETED", copy.deepcopy(pod), pod)
        terminating = copy.deepcopy(pod)
        deadline = datetime.now(UTC) + timedelta(seconds=period)
        terminating["metadata"]["deletionTimestamp"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
        terminating["metadata"]["deletionGracePeriodSeconds"] = period
        stored = self._commit(PODS, "MODIFIED", terminating, pod)
        if self.grace_seconds is not None:
            due = time.monotonic() + self.grace_seconds
            heapq.heappush(
                self._reaper_due, (due, next(self._reaper_seq), key_of(PODS, pod), meta["uid"])
            )
            self._reaper_wake.notify_all()
        return stored

    def _finish_deletion(self, key: Key, uid: str) -> bool:
        pod = self._objects[PODS].get(key)
        if pod is None or pod["metadata"]["uid"] != uid:
            return False
        self._commit(PODS, "DELETED", copy.deepcopy(pod), pod)
        return True

    def _reap_loop(self) -> None:
        with self._lock:
            while not self._stopping:
                if not self._reaper_due:
                    self._reaper_wake.wait(timeout=1.0)
                    continue
                due, _, key, uid = self._reaper_due[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._reaper_wake.wait(timeout=wait)
                    continue
                heapq.heappop(self._reaper_due)
                self._finish_deletion(key, uid)

    # --- verbs: eviction

    def rest_evict(self, namespace: str, name: str, body: Any, query: Mapping[str, str]) -> Obj:
        """The eviction subresource (pkg/registry/core/pod/storage/eviction.go, see the module
        docstring): budget checks and the pod's deletion in one step under the lock."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be an Eviction object")
        if body.get("kind") not in (None, "Eviction"):
            raise bad_request(f"not a Eviction object: {body.get('kind')}")
        if body.get("apiVersion") not in (None, "policy/v1", "policy/v1beta1"):
            raise bad_request(
                f"the API version in the data ({body.get('apiVersion')}) is not policy/v1 or "
                "policy/v1beta1"
            )
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise bad_request("name in URL does not match name in Eviction object")
        if meta.get("namespace") not in (None, "", namespace):
            raise bad_request(NAMESPACE_MISMATCH)
        options = body.get("deleteOptions") or {}
        dry_run = bool(options.get("dryRun") or query.get("dryRun"))
        with self._lock:
            pod = self._get(PODS, namespace, name)
            if pod is None:
                raise not_found(PODS, name)
            self._check_preconditions(PODS, pod, options)
            phase = pod.get("status", {}).get("phase")
            already = "deletionTimestamp" in pod["metadata"]
            budget_key: str | None = None
            # canIgnorePDB in pkg/registry/core/pod/storage/eviction.go: a Pending, Succeeded or
            # Failed pod, or one with a deletionTimestamp, "already caused disruption", so it is
            # deleted without a budget check. For a terminating pod the deletion is a no-op and
            # the answer is 201 again: a retried eviction is harmless and uses no budget.
            if not (phase in ("Pending", "Succeeded", "Failed") or already):
                budgets = self._budgets_for(pod)
                if len(budgets) > 1:
                    raise ApiError(
                        500,
                        None,
                        "This pod has more than one PodDisruptionBudget, which the eviction "
                        "subresource does not support.",
                    )
                if budgets:
                    budget_key = self._use_budget(budgets[0], pod, dry_run)
            if dry_run:
                return {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                }
            pod = self._add_disruption_condition(pod)
            self._delete_pod(pod, options.get("gracePeriodSeconds"))
            self._evictions.append(
                EvictionRecord(
                    namespace,
                    name,
                    pod["metadata"]["uid"],
                    not (already or phase != "Running"),
                    budget_key,
                )
            )
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }

    def _budgets_for(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels")
        found = []
        for (budget_namespace, _), budget in sorted(self._objects[PDBS].items()):
            if budget_namespace != namespace:
                continue
            selector = from_label_selector(budget.get("spec", {}).get("selector"))
            if selector is not None and matches(selector, labels):
                found.append(budget)
        return found

    def _use_budget(self, budget: Obj, pod: Obj, dry_run: bool) -> str | None:
        """checkAndDecrement: 429 when the budget allows no disruption, else decrement it."""
        status = budget.get("status", {})
        name = budget["metadata"]["name"]
        desired, current = status.get("desiredHealthy", 0), status.get("currentHealthy", 0)
        if not _pod_ready(pod) and current >= desired and desired > 0:
            return None  # an unready pod does not count as healthy: evicting it costs nothing
        if status.get("observedGeneration", 0) < budget["metadata"].get("generation", 0):
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": (
                                f"The disruption budget {name} is still being processed by the "
                                "server."
                            ),
                        }
                    ],
                    "retryAfterSeconds": 10,
                },
            )
        allowed = status.get("disruptionsAllowed", 0)
        if allowed < 0:
            raise ApiError(
                403,
                "Forbidden",
                f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is '
                "negative",
                status_details(PDBS, name),
            )
        if allowed == 0:
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": (
                                f"The disruption budget {name} needs {desired} healthy pods and "
                                f"has {current} currently"
                            ),
                        }
                    ]
                },
            )
        if dry_run:
            return None
        updated = copy.deepcopy(budget)
        new_status = updated.setdefault("status", {})
        new_status["disruptionsAllowed"] = allowed - 1
        new_status.setdefault("disruptedPods", {})[pod["metadata"]["name"]] = now_timestamp()
        if allowed - 1 == 0:
            _set_disruption_condition(new_status)
        self._commit(PDBS, "MODIFIED", updated, budget)
        return f"{budget['metadata']['namespace']}/{name}"

    def _add_disruption_condition(self, pod: Obj) -> Obj:
        """The DisruptionTarget condition the eviction writes before deleting (MODIFIED)."""
        conditions = pod.get("status", {}).get("conditions", [])
        if any(
            c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions
        ):
            return pod
        updated = copy.deepcopy(pod)
        updated.setdefault("status", {}).setdefault("conditions", []).append(
            {
                "lastProbeTime": None,
                "lastTransitionTime": now_timestamp(),
                "message": "Eviction API: evicting",
                "reason": "EvictionByEvictionAPI",
                "status": "True",
                "type": "DisruptionTarget",
            }
        )
        return self._commit(PODS, "MODIFIED", updated, pod)


def _set_disruption_condition(status: Obj) -> None:
    """UpdateDisruptionAllowedCondition: True/SufficientPods when any disruption is allowed."""
    allowed = status.get("disruptionsAllowed", 0) > 0
    wanted = ("True", "SufficientPods") if allowed else ("False", "InsufficientPods")
    conditions = status.setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == "DisruptionAllowed":
            if (condition.get("status"), condition.get("reason")) != wanted:
                condition["status"], condition["reason"] = wanted
                condition["lastTransitionTime"] = now_timestamp()
            return
    conditions.append(
        {
            "lastTransitionTime": now_timestamp(),
            "message": "",
            "observedGeneration": status.get("observedGeneration", 1),
            "reason": wanted[1],
            "status": wanted[0],
            "type": "DisruptionAllowed",
        }
    )
