"""Translate only what changed: the cluster-state items kept up to date from the watch events
since the last push, not by translating all 150,000 pods and diffing them at every push.

``Translator.update`` takes the objects that changed (by kind and key; None for one that is
gone) and re-reads only what depends on them:

- a **pod** of ours: its task, and its application's facts (queue: where placement puts the
  oldest pod; originator; gang). When those facts change, every task of the application is
  read again; otherwise only the changed pods;
- a pod of **another scheduler** bound to a node: that node's item (its pods take part of the
  node's capacity);
- a **node**: its item; when a node appears or goes, the tasks that name it (bound to it,
  nominated to it, a DaemonSet pod's required node) are read again;
- a **budget**: its item; when it appears, goes or its selector changes, the bound tasks of its
  namespace (which budget covers a pod);
- a **namespace** whose ``parentqueue`` annotation changed (or that appeared or went): the
  applications of its pods of ours are placed again; a **PriorityClass** whose
  ``allow-preemption`` annotation changed: its pods' tasks;
- the partition's config or the unique-id mode (``Reading``): everything is read again (they
  change the placement of any pod; rare).

Placement: YuniKorn places applications in the order it saw them, and an application placed
later finds the dynamic queues earlier ones created. While no placement creates a queue (the
usual case: the product holds only configured queues) an application's queue depends on its
own oldest pod alone, and only the changed applications are placed. As soon as any placement
creates a queue, every application is placed again at each update, in YuniKorn's order (exact,
and still cheaper than a full translation: pods are read again only where their application's
facts changed).

Every item written is journalled with the value it had at the last push, so ``delta`` is the
body of what changed (upserts and ``remove``), computed over the journal only. The result
equals ``translate.translate`` of the same objects: ``tests/agent/test_delta.py`` replays
random event batches and compares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from scheduler_admin_agent.kube import BUDGETS, NAMESPACES, NODES, PODS, PRIORITY_CLASSES
from scheduler_admin_agent.records import NodeRecord, PodRecord
from scheduler_admin_agent.translate import (
    ALLOW_PREEMPTION_ANNOTATION,
    PARENT_QUEUE_ANNOTATION,
    AppFacts,
    BudgetSelector,
    ClusterState,
    Reading,
    _add,
    budget_item,
    budget_selectors,
    gated_reason,
    is_gang,
    node_item,
    occupied_by,
    originator,
    place_applications,
    pod_application,
    pod_id,
    pod_kind,
    several_budgets_item,
    task_item,
)

#: Body keys in the product's order.
BODY_KINDS = ("nodes", "allocations", "asks", "budgets")
_ABSENT = object()


class _Facts(NamedTuple):
    """An application's facts at the last update (named tuples here: one is made per
    application and per pod on the first update, cheaper than a frozen dataclass)."""

    queue: str
    not_placed: str
    gang: bool
    originator: str


class _Seen(NamedTuple):
    """What one pod contributed at the last update (to take it back when it changes)."""

    kind: str  # pod_kind: ours, gated, occupies, ""
    task: str  # its task id (ours, gated)
    app: str  # ours
    namespace: str
    node: str  # bound node (ours, occupies)
    names: tuple[str, ...]  # nodes its task reads (bound, nominated, required)


class Translator:
    """The cluster's translation, kept up to date (see the module docstring)."""

    def __init__(self, scheduler_name: str, *, unique_app_ids: bool = False) -> None:
        self.scheduler_name = scheduler_name
        self.unique_app_ids = unique_app_ids
        self.state = ClusterState()
        self.reading: Reading | None = None
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[str, PodRecord] = {}
        self.pdbs: dict[str, Any] = {}
        self.namespaces: dict[str, Any] = {}
        self.priority_classes: dict[str, Any] = {}
        self._seen: dict[str, _Seen] = {}
        self._apps: dict[str, set[str]] = {}
        self._facts: dict[str, _Facts] = {}
        self._occupants: dict[str, dict[str, dict[str, Fraction]]] = {}
        self._naming: dict[str, set[str]] = {}  # node -> uids of our pods whose task reads it
        self._in_namespace: dict[str, set[str]] = {}  # namespace -> uids of our pods
        self._budgets_by_ns: dict[str, list[BudgetSelector]] = {}
        self._several: dict[str, set[str]] = {}  # synthetic budget -> task ids naming it
        self._pod_task_kind: dict[str, str] = {}  # task id -> allocations | asks | skipped
        #: kind -> key -> the item the product held at the last push (_ABSENT: none).
        self._journal: dict[str, dict[str, Any]] = {kind: {} for kind in BODY_KINDS}
        #: How many pods the last ``update`` read again (what it cost; tests read it).
        self.pods_read = 0

    # --- inputs -------------------------------------------------------------------------------

    def update(
        self, changes: Mapping[str, Mapping[str, Any]], config: Mapping[str, Any]
    ) -> ClusterState:
        """Apply the changed objects (kind -> key -> object, None when gone) and ``config``."""
        for kind, table in (
            (NAMESPACES, self.namespaces),
            (PRIORITY_CLASSES, self.priority_classes),
        ):
            for key, obj in changes.get(kind, {}).items():
                _store(table, key, obj)
        reading = Reading(
            config,
            {name: dict(ns.metadata.annotations or {}) for name, ns in self.namespaces.items()},
            self.unique_app_ids,
            {
                name: dict(pc.metadata.annotations or {})
                for name, pc in self.priority_classes.items()
            },
        )
        previous = self.reading
        everything = previous is None or (previous.config, previous.unique_app_ids) != (
            reading.config,
            reading.unique_app_ids,
        )
        self.reading = reading
        dirty_pods: set[str] = set()
        dirty_apps: set[str] = set()
        dirty_nodes: set[str] = set()
        if previous is not None and not everything:
            self._annotations_changed(previous, reading, dirty_apps, dirty_pods)

        for name, node in changes.get(NODES, {}).items():
            existed = name in self.nodes
            _store(self.nodes, name, node)
            dirty_nodes.add(name)
            if existed != (node is not None):
                dirty_pods |= self._naming.get(name, set())

        touched_ns: set[str] = set()
        for key, pdb in changes.get(BUDGETS, {}).items():
            old = self.pdbs.get(key)
            _store(self.pdbs, key, pdb)
            self._set("budgets", key, budget_item(pdb) if pdb is not None else None)
            namespace = key.split("/", 1)[0]
            if old is None or pdb is None or _selector(old) != _selector(pdb):
                touched_ns.add(namespace)
        if touched_ns:
            grouped: dict[str, list[Any]] = {namespace: [] for namespace in touched_ns}
            for pdb in self.pdbs.values():  # one pass, not one per namespace
                if pdb.metadata.namespace in grouped:
                    grouped[pdb.metadata.namespace].append(pdb)
            for namespace, pdbs in grouped.items():
                self._budgets_by_ns[namespace] = budget_selectors(pdbs)
                dirty_pods |= self._in_namespace.get(namespace, set())

        seen = self._seen
        for uid, pod in changes.get(PODS, {}).items():
            if uid in seen:
                self._forget(uid, dirty_apps, dirty_nodes)
            _store(self.pods, uid, pod)
            if pod is not None:
                self._note(uid, pod, dirty_apps, dirty_nodes)
            dirty_pods.add(uid)

        if everything:
            dirty_apps = set(self._apps)
            dirty_nodes = set(self.nodes) | set(self._occupants)
            dirty_pods = set(self.pods)
        for name in dirty_nodes:
            self._node(name)
        dirty_pods |= self._place(dirty_apps)
        for uid in dirty_pods:
            self._task(uid)
        self.pods_read = len(dirty_pods)
        return self.state

    def _annotations_changed(
        self, previous: Reading, reading: Reading, dirty_apps: set[str], dirty_pods: set[str]
    ) -> None:
        """What a namespace's or a PriorityClass's annotation change touches: the applications
        of that namespace's pods of ours (the ``namespace.parentqueue`` tag their placement can
        read), the pods of that PriorityClass (their ``allow_preemption`` fallback). A new
        namespace (a CI job's, say) then costs its own pods, not a translation of the cluster."""
        for namespace in _changed(previous.namespaces, reading.namespaces, PARENT_QUEUE_ANNOTATION):
            for uid in self._in_namespace.get(namespace, ()):
                dirty_apps.add(self._seen[uid].app)
            if namespace == "default":  # a pod without a namespace reads as "default"
                for uid in self._in_namespace.get("", ()):
                    dirty_apps.add(self._seen[uid].app)
        classes = _changed(
            previous.priority_classes, reading.priority_classes, ALLOW_PREEMPTION_ANNOTATION
        )
        if classes:
            dirty_pods.update(
                uid for uid, pod in self.pods.items() if pod.priority_class in classes
            )

    def _forget(self, uid: str, dirty_apps: set[str], dirty_nodes: set[str]) -> None:
        """Take back what the pod contributed (its task is removed or rewritten by ``_task``)."""
        seen = self._seen.pop(uid, None)
        if seen is None:
            return
        if seen.kind == "occupies":
            self._occupants.get(seen.node, {}).pop(uid, None)
            dirty_nodes.add(seen.node)
        if seen.kind == "ours":
            self._apps[seen.app].discard(uid)
            dirty_apps.add(seen.app)
            self._in_namespace[seen.namespace].discard(uid)
            for name in seen.names:
                self._naming[name].discard(uid)
        if seen.task:
            self._drop_task(seen.task)

    def _note(self, uid: str, pod: PodRecord, dirty_apps: set[str], dirty_nodes: set[str]) -> None:
        kind = pod_kind(pod, self.scheduler_name)
        node = pod.node
        namespace = pod.namespace
        app, names = "", ()
        if kind == "occupies":
            used = occupied_by(pod)
            if used is not None:
                self._occupants.setdefault(node, {})[uid] = used
            dirty_nodes.add(node)
        elif kind == "ours":
            app = pod_application(pod, unique_app_ids=self.unique_app_ids)
            _member(self._apps, app, uid)
            dirty_apps.add(app)
            _member(self._in_namespace, namespace, uid)
            nominated, daemon_node = pod.nominated, pod.daemon_node
            if nominated or daemon_node:
                names = tuple(n for n in {node, nominated, daemon_node} if n)
            else:  # the usual case: a bound pod reads its node alone, a pending one none
                names = (node,) if node else ()
            for name in names:
                _member(self._naming, name, uid)
        task = pod_id(pod) if kind in ("ours", "gated") else ""
        self._seen[uid] = _Seen(kind, task, app, namespace, node, names)

    # --- outputs ------------------------------------------------------------------------------

    def _set(self, kind: str, key: str, item: dict[str, Any] | None) -> None:
        """Write one item of the state, journalling what it was at the last push."""
        table: dict[str, Any] = getattr(self.state, kind)
        journal = self._journal[kind]
        if key not in journal:
            journal[key] = table.get(key, _ABSENT)
        if item is None:
            table.pop(key, None)
        else:
            table[key] = item

    def _node(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            self._set("nodes", name, None)
            return
        occupied: dict[str, Fraction] = {}
        for used in self._occupants.get(name, {}).values():
            _add(occupied, used)
        self._set("nodes", name, node_item(node, occupied))

    def _place(self, dirty_apps: set[str]) -> set[str]:
        """Place the changed applications (all of them once any placement creates a queue);
        returns the pods whose tasks must be read again."""
        assert self.reading is not None
        for app in [app for app in dirty_apps if not self._apps.get(app)]:
            self._apps.pop(app, None)
            self._facts.pop(app, None)
            dirty_apps.discard(app)
        apps = set(self._apps) if self.state.dynamic_queues else dirty_apps
        placed = ClusterState()
        by_app = {app: [self.pods[uid] for uid in self._apps[app]] for app in apps}
        queues = place_applications(by_app, self.reading, placed)
        if placed.dynamic_queues and apps != set(self._apps):
            apps = set(self._apps)
            placed = ClusterState()
            by_app = {app: [self.pods[uid] for uid in self._apps[app]] for app in apps}
            queues = place_applications(by_app, self.reading, placed)
        if apps == set(self._apps):
            self.state.dynamic_queues = placed.dynamic_queues
        dirty: set[str] = set()
        for app in apps:
            pods = by_app[app]
            first = originator(pods)
            queue, not_placed = queues[app]
            facts = _Facts(queue, not_placed, is_gang(pods), first)
            before = self._facts.get(app)
            self._facts[app] = facts
            if before is None or before[:3] != facts[:3]:  # queue, not_placed, gang
                dirty |= self._apps[app]
            elif before.originator != facts.originator:
                dirty |= {before.originator, facts.originator} & self._apps[app]
        return dirty

    def _task(self, uid: str) -> None:
        pod = self.pods.get(uid)
        seen = self._seen.get(uid)
        if pod is None or seen is None or not seen.task:
            return
        assert self.reading is not None
        if seen.task in self._pod_task_kind:
            self._drop_task(seen.task)
        if seen.kind == "gated":
            self.state.skipped[seen.task] = gated_reason(pod)
            self._pod_task_kind[seen.task] = "skipped"
            return
        facts = self._facts[seen.app]
        kind, item = task_item(
            pod,
            AppFacts(seen.app, facts.queue, facts.not_placed, facts.gang, uid == facts.originator),
            self.nodes,
            self._budgets_by_ns,
            self.reading,
            seen.task,
        )
        self._pod_task_kind[seen.task] = kind
        if kind == "skipped":
            self.state.skipped[seen.task] = item
            return
        pdb = item.get("pdb")
        if pdb is not None and pdb not in self.pdbs:  # several budgets: a synthetic one
            holders = self._several.setdefault(pdb, set())
            if not holders:
                self._set("budgets", pdb, several_budgets_item(pdb))
            holders.add(seen.task)
        self._set(kind, seen.task, item)

    def _drop_task(self, task: str) -> None:
        kind = self._pod_task_kind.pop(task, None)
        if kind is None:
            return
        if kind == "skipped":
            self.state.skipped.pop(task, None)
            return
        item = getattr(self.state, kind).get(task)
        pdb = (item or {}).get("pdb")
        if pdb in self._several:
            holders = self._several[pdb]
            holders.discard(task)
            if not holders:
                del self._several[pdb]
                if pdb not in self.pdbs:
                    self._set("budgets", pdb, None)
        self._set(kind, task, None)

    def delta(self) -> dict[str, Any]:
        """The body of what changed since the last ``pushed`` (empty: nothing did)."""
        body: dict[str, Any] = {}
        remove: dict[str, list[str]] = {}
        for kind in BODY_KINDS:
            table: dict[str, Any] = getattr(self.state, kind)
            changed, gone = [], []
            for key, before in self._journal[kind].items():
                now = table.get(key, _ABSENT)
                if now is _ABSENT:
                    if before is not _ABSENT:
                        gone.append(key)
                elif now != before:
                    changed.append(now)
            if changed:
                body[kind] = changed
            if gone:
                remove[kind] = sorted(gone)
        if remove:
            body["remove"] = remove
        return body

    def everything(self) -> dict[str, list[dict[str, Any]]]:
        """Every item (a replace push)."""
        return {kind: list(getattr(self.state, kind).values()) for kind in BODY_KINDS}

    def pushed(self) -> None:
        """The product now holds the state: the journal starts again from it."""
        for journal in self._journal.values():
            journal.clear()


def _changed(
    before: Mapping[str, Mapping[str, str]], after: Mapping[str, Mapping[str, str]], name: str
) -> set[str]:
    """The objects whose annotation ``name`` differs between two readings (added and removed
    objects included; annotations the translation does not read are ignored)."""
    return {
        key
        for key in before.keys() | after.keys()
        if (before.get(key) or {}).get(name) != (after.get(key) or {}).get(name)
    }


def _member(groups: dict[str, set[str]], key: str, uid: str) -> None:
    """Add ``uid`` to the set of ``key`` (``setdefault(key, set())`` would make a set per call,
    and this runs three times a pod on the first update)."""
    members = groups.get(key)
    if members is None:
        groups[key] = members = set()
    members.add(uid)


def _store(table: dict[str, Any], key: str, obj: Any | None) -> None:
    if obj is None:
        table.pop(key, None)
    else:
        table[key] = obj


def _selector(pdb: Any) -> Any:
    return pdb.spec.selector if pdb.spec else None


def all_changed(objects: Mapping[str, Iterable[Any]], key: Any) -> dict[str, dict[str, Any]]:
    """Every object as a change (the first update, or a kind listed again), by ``key``."""
    return {kind: {key(kind, obj): obj for obj in items} for kind, items in objects.items()}
