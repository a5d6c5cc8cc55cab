"""``ClusterState``: the fake API server's storage and REST semantics, without the HTTP.

Objects by resource and key, one global resource version, a bounded event history, the open
watches, and the verbs (list, watch, get, create, replace, patch, delete, evict) with the real
API server's rules; ``server.FakeKubeAPI`` serves them over HTTP and its module docstring lists
what is reproduced and what is not. Everything runs under one lock; stored objects are never
mutated (a write stores a new dict), so a reader may serialise what it got after releasing it.

The class is assembled by concern: ``store`` (the objects, history, watches and the one write
path), ``writes`` (create, replace, patch, delete, graceful pod deletion), ``eviction`` (the
eviction subresource); this module adds the test-facing controls and the reads (get, list,
watch). ``params`` holds the query and continue-token helpers, ``watching`` the watch events.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from tests.support.kube.admission import Decide, webhook
from tests.support.kube.eviction import EvictionVerbs, set_disruption_condition
from tests.support.kube.params import (
    decode_continue,
    encode_continue,
    int_param,
    parse_rv,
    strip_type,
    truthy,
)
from tests.support.kube.resources import (
    CONTINUE_EXPIRED,
    PODS,
    Key,
    Obj,
    ResourceType,
    bad_request,
    expired,
    key_of,
    not_found,
    now_timestamp,
    resource_for,
    sort_key,
    too_large,
)
from tests.support.kube.selectors import (
    FieldRequirement,
    Selector,
    SelectorError,
    fields_match,
    matches,
    parse_field_selector,
    parse_label_selector,
)
from tests.support.kube.store import EvictionRecord
from tests.support.kube.watching import END, Watcher, WatchPlan

__all__ = ["END", "ClusterState", "EvictionRecord", "WatchPlan", "Watcher", "truthy"]


class ClusterState(EvictionVerbs):
    """The objects and watches of a fake API server, and its verbs (see the module docstring).

    ``grace_seconds``: how long a gracefully deleted (or evicted) pod stays terminating before
    it is removed (None: until ``reap()``). ``history_limit``: events kept for watches and paged
    lists (older versions answer 410). ``watch_timeout``: seconds after which a watch without
    ``timeoutSeconds`` ends (None: never).
    """

    # --- test-facing state API

    @property
    def resource_version(self) -> int:
        """The current global resource version."""
        with self._lock:
            return self._rv

    def load(self, objects: Mapping[str, Any] | Iterable[Obj], *, fresh: bool = False) -> None:
        """Add every object of a ``fixtures.cluster()`` dict, a kubectl List, or an iterable.

        ``fresh``: the objects were built for this call and the caller keeps no reference to
        them, so they are stored as they are instead of copied (a copy of tens of thousands of
        pods takes longer than building them)."""
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
                self._add(dict(item) if fresh else copy.deepcopy(dict(item)))

    def add(self, obj: Mapping[str, Any]) -> Obj:
        """Create an object as a controller would (ADDED); returns the stored copy."""
        return copy.deepcopy(self._add(copy.deepcopy(dict(obj))))

    def _add(self, stored: Obj) -> Obj:
        """Store ``stored`` (a dict nobody else holds) as a new object; returns it."""
        resource = resource_for(stored["kind"])
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
            return self._commit(resource, "ADDED", stored, None)

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

    def peek(self, kind: str) -> list[Obj]:
        """Every stored object of ``kind`` itself, not a copy, in no particular order: for reading
        a big cluster quickly. Stored objects are never changed (a write stores a new dict), so
        they stay as they were; the caller must not change them either."""
        resource = resource_for(kind)
        with self._lock:
            return list(self._objects[resource].values())

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
            set_disruption_condition(status)

        return self.edit("PodDisruptionBudget", name, change, namespace)

    def edit_configmap(self, namespace: str, name: str, fn: Callable[[Obj], object]) -> Obj:
        """A concurrent writer's change to a ConfigMap (bumps its resourceVersion, MODIFIED)."""
        return self.edit("ConfigMap", name, fn, namespace)

    def add_webhook(
        self,
        name: str,
        decide: Decide,
        *,
        operations: Iterable[str] = ("CREATE", "UPDATE"),
        resources: Iterable[str] = ("configmaps",),
    ) -> None:
        """Register a validating admission webhook (see ``admission``): ``decide`` sees every
        matching request (``resources``: plurals, ``"pods/eviction"`` for evictions, ``"*"``)
        and denies it by returning a ``Denial`` or a message."""
        with self._lock:
            self.webhooks.append(webhook(name, decide, operations, resources))

    def at_list_page(self, kind: str, page: int, action: Callable[[], object]) -> None:
        """Run ``action()`` once, when the server has read page ``page`` of a paged list of
        ``kind`` (a list with ``limit``: the request without ``continue`` is page 1, each
        continuation the next page) and before it answers it, outside the lock: the moment a
        client is between two pages. An action that writes and then ``compact()``s is etcd
        compacting the list's version away while a client pages through it, so its next page
        answers 410 Expired (what ``continue_ttl`` does on its own, at a chosen page)."""
        with self._lock:
            self._page_actions[resource_for(kind)] = (page, action)

    def _page_answered(self, resource: ResourceType, continued: bool) -> None:
        """Count a page of a paged list of ``resource``; run its ``at_list_page`` action."""
        with self._lock:
            number = self._list_pages.get(resource, 0) + 1 if continued else 1
            self._list_pages[resource] = number
            due = self._page_actions.get(resource)
            if due is None or due[0] != number:
                return
            del self._page_actions[resource]
        due[1]()

    # --- test-facing watch controls

    @contextlib.contextmanager
    def hold_watches(self) -> Iterator[None]:
        """Stop writing to every watch stream while inside (as a client that does not read, or
        a congested network): events pile up in each watcher's buffer, and one that passes
        ``watch_buffer`` is closed by the server."""
        self._holding.set()
        try:
            yield
        finally:
            self._holding.clear()

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
        limit = int_param(query, "limit") or 0
        token = query.get("continue") or ""
        requested = query.get("resourceVersion") or ""
        start = ""
        with self._lock:
            if token:
                if requested:
                    raise bad_request(
                        "specifying resource version is not allowed when using continue"
                    )
                at, start = decode_continue(token)
                if at == -1:  # a token from a 410's Status: continue at the latest version
                    at = self._rv
                elif at < self._floor or self._superseded_long_ago(at):
                    # etcd3 store handleCompactedErrorForPaging: 410 Expired, and in the Status's
                    # metadata a token that continues from the same key at the latest version.
                    error = expired(CONTINUE_EXPIRED)
                    error.status["metadata"] = {"continue": encode_continue(-1, start, after=False)}
                    raise error
            elif requested and requested != "0":
                wanted = parse_rv(requested)
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
        keys = self._sorted_keys(resource, at, state)
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
                continue_token = encode_continue(at, sort_key(key_of(resource, selected[-1])))
                if not labels and not fields and namespace is None:
                    remaining = len(keys) - index
                elif not labels and not fields:
                    remaining = sum(1 for k in keys[index:] if k[0] == namespace)
                break
            selected.append(obj)
        if limit:
            self._page_answered(resource, bool(token))
        metadata: Obj = {"resourceVersion": str(at)}
        if continue_token:
            metadata["continue"] = continue_token
            if remaining:
                metadata["remainingItemCount"] = remaining
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": metadata,
            "items": [strip_type(obj) for obj in selected],
        }

    def _sorted_keys(self, resource: ResourceType, at: int, state: Mapping[Key, Obj]) -> list[Key]:
        """The keys of ``state`` (``resource`` at version ``at``) in etcd order. The last list's
        are kept: every page of a paged list reads the same version, and which objects existed
        at a version never changes."""
        cached = self._keys_at
        if cached is not None and cached[0] is resource and cached[1] == at:
            return cached[2]
        keys = sorted(state, key=sort_key)
        self._keys_at = (resource, at, keys)
        return keys

    def rest_watch(
        self, resource: ResourceType, namespace: str | None, query: Mapping[str, str]
    ) -> WatchPlan:
        labels, fields = self._selectors(resource, query)
        timeout = int_param(query, "timeoutSeconds")
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
                wanted = parse_rv(requested)
                if wanted < self._floor:
                    error = expired(f"too old resource version: {wanted} ({self._floor})")
                    return WatchPlan(watcher, [("ERROR", error.status)], None)
                if wanted > self._rv:
                    return WatchPlan(watcher, [("ERROR", too_large(wanted, self._rv).status)], None)
                for event in self._events_after(wanted):
                    seen = watcher.translate(event)
                    if seen is not None:
                        initial.append(("EVENT", *seen))
            watcher.unsent = sum(1 for item in initial if item[0] == "EVENT")
            self._watchers.add(watcher)
        limit = float(timeout) if timeout else self.watch_timeout
        return WatchPlan(watcher, initial, limit)
