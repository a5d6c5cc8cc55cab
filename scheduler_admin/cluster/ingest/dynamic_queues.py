"""Reading a push's ``dynamic_queues`` (SPEC 3.4): the queues YuniKorn created for applications.

Each item is ``{"path": "root.tenants.batch", "leaf": true, "template": {...}}``, the
``template`` a ``childtemplate`` as in ``queues.yaml`` (``resources.guaranteed``/``max``,
``properties``, ``maxapplications``). Checked as YuniKorn creates such queues:

- every name of the path is a valid queue name; the path is not a configured queue;
- its parent is a configured parent queue (children or ``parent: true``) or a dynamic queue of
  this push (or stored, for a push that does not replace) that is no leaf: YuniKorn creates
  nothing under a leaf;
- ``root.@recovery@`` (where YuniKorn keeps running pods no rule places) is a leaf under root
  with no template; no other queue may be named ``@recovery@``;
- the template passes YuniKorn's ``childtemplate`` rules (``preemption.yunikorn_rules``).

A dynamic leaf then takes allocations and asks like a configured leaf (``Checker.leaves``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from preemption.config import PartitionConfig, plain_data_problems
from preemption.placement import RECOVERY_NAME, valid_queue_name
from scheduler_admin.base.limits import QUEUE_PATH_MAX_LENGTH
from scheduler_admin.cluster.dynamic import (
    RECOVERY_QUEUE,
    StoredDynamicQueue,
    configured_tree,
    template_problems,
    template_values,
)
from scheduler_admin.cluster.ingest.checker import Checker, quote

ITEM_KEYS = {"path", "leaf", "template"}


def read_dynamic_queues(
    checker: Checker,
    value: object,
    config: PartitionConfig,
    *,
    stored: Iterable[StoredDynamicQueue],
) -> list[dict[str, Any]]:
    """The checked items (paths in the config's spelling for the configured part), problems
    kept in ``checker`` by path (``dynamic_queues[2].template.resources.max.memory``). The
    dynamic leaves, those of the body and the ``stored`` ones it keeps, join ``checker.leaves``."""
    raws = checker.items(value, "dynamic_queues")
    # The configured tree costs a walk of every queue (some 0.15 s at 5,000 queues): only a
    # body that lists dynamic queues needs it, and most pushes (deltas, empty pushes) list none.
    tree = configured_tree(config) if raws else None
    #: lower-cased path -> (path, leaf) of the dynamic queues a queue of the body may sit under.
    known: dict[str, tuple[str, bool]] = {row.path.lower(): (row.path, row.leaf) for row in stored}
    read: list[tuple[int, str, bool, dict[str, Any]]] = []
    for index, raw in enumerate(raws):
        at = f"dynamic_queues[{index}]"
        item = checker.mapping(raw, at, ITEM_KEYS)
        path = checker.text(item.get("path"), f"{at}.path", limit=QUEUE_PATH_MAX_LENGTH)
        leaf = checker.boolean(item.get("leaf"), f"{at}.leaf", True)
        template = _template(checker, item.get("template"), f"{at}.template")
        if path:
            read.append((index, path, leaf, template))
    items: dict[str, dict[str, Any]] = {}
    for index, path, leaf, template in sorted(read, key=lambda entry: entry[1].count(".")):
        at = f"dynamic_queues[{index}]"
        spelt = _placed_path(checker, tree, known, path, leaf, template, at)
        if spelt is None:
            continue
        if spelt.lower() in items:
            checker.fail(f"{at}.path", f"duplicate {quote(path)} in this body")
            continue
        known[spelt.lower()] = (spelt, leaf)
        guaranteed, maximum, properties = template_values(template)
        items[spelt.lower()] = {
            "index": index,
            "path": spelt,
            "leaf": leaf,
            "template": template,
            "guaranteed": guaranteed,
            "max": maximum,
            "properties": properties,
        }
    checker.leaves = checker.leaves | {spelt for spelt, leaf in known.values() if leaf}
    return [
        {key: value for key, value in item.items() if key != "index"}
        for item in sorted(items.values(), key=lambda item: item["index"])
    ]


def _template(checker: Checker, value: object, at: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        checker.fail(at, "must be an object (a childtemplate: resources, properties)")
        return {}
    sound = True
    for where, message in plain_data_problems(value, at):
        checker.fail(where, message)
        sound = False
    if sound:
        for where, message in template_problems(value):
            checker.fail(f"{at}{where}", message)
            sound = False
    return value if sound else {}


def _placed_path(
    checker: Checker,
    tree: Any,
    known: dict[str, tuple[str, bool]],
    path: str,
    leaf: bool,
    template: dict[str, Any],
    at: str,
) -> str | None:
    """The path in the config's spelling where YuniKorn could have created this queue, or
    None (the problem kept in ``checker``)."""
    parts = path.split(".")
    if parts[0].lower() != "root" or len(parts) < 2:
        checker.fail(f"{at}.path", f"{quote(path)} must be a queue path below root")
        return None
    for part in parts[1:]:
        if not valid_queue_name(part):
            checker.fail(f"{at}.path", f"{quote(part)} is not a valid queue name")
            return None
    if path.lower() == RECOVERY_QUEUE:
        if not leaf or template:
            checker.fail(f"{at}.path", f"{RECOVERY_QUEUE} is a leaf with no template")
            return None
        return RECOVERY_QUEUE
    if any(part == RECOVERY_NAME for part in parts[1:]):
        checker.fail(f"{at}.path", f"only {RECOVERY_QUEUE} may be named {RECOVERY_NAME}")
        return None
    if tree.get(path) is not None:
        checker.fail(f"{at}.path", f"{quote(path)} is a configured queue, not a dynamic one")
        return None
    parent_path, name = path.rsplit(".", 1)
    configured = tree.get(parent_path)
    if configured is not None:
        if configured.leaf:
            checker.fail(
                f"{at}.path",
                f"its parent {configured.path} is a leaf queue: YuniKorn creates no queue "
                "under a leaf",
            )
            return None
        return f"{configured.path}.{name}"
    dynamic = known.get(parent_path.lower())
    if dynamic is None:
        checker.fail(
            f"{at}.path",
            f"its parent {quote(parent_path)} is neither a parent queue of the config nor a "
            "dynamic queue of this push",
        )
        return None
    if dynamic[1]:
        checker.fail(
            f"{at}.path",
            f"its parent {dynamic[0]} is a dynamic leaf: YuniKorn creates no queue under a leaf",
        )
        return None
    return f"{dynamic[0]}.{name}"
