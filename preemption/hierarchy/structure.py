"""The tree's shape (SPEC 3.2): one root, known parents, no cycles, valid and unique names (also
unique ignoring case, as YuniKorn compares them), and paths that fit their column."""

from __future__ import annotations

import re
from collections.abc import Iterable

from preemption.config import QUEUE_PATH_MAX_LENGTH, ROOT, PartitionConfig, QueueConfig
from preemption.errors import ConfigError

#: YuniKorn's rule for queue names (and ours for partition names).
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")  # always used with fullmatch


def structure_errors(config: PartitionConfig) -> list[ConfigError]:
    errors: list[ConfigError] = []
    by_path: dict[str, QueueConfig] = {}
    for queue in config.queues:
        if queue.path in by_path:
            errors.append(ConfigError(queue.path, "name", f"duplicate queue name {queue.name!r}"))
        by_path[queue.path] = queue

    errors.extend(_case_clash_errors(config.queues))
    ending: set[str] = set()  # paths whose parents lead to a queue without one: no cycle
    roots = [queue for queue in config.queues if queue.parent is None]
    if [queue.path for queue in roots] != [ROOT]:
        errors.append(ConfigError(None, "queues", "there must be exactly one top queue, 'root'"))
    for queue in config.queues:
        if len(queue.path) > QUEUE_PATH_MAX_LENGTH:
            errors.append(
                ConfigError(
                    queue.path,
                    "path",
                    f"the path is {len(queue.path)} characters long, over the limit of "
                    f"{QUEUE_PATH_MAX_LENGTH}: use shorter names or fewer levels",
                )
            )
        if queue.parent is None:
            continue
        if not isinstance(queue.name, str) or not NAME_PATTERN.fullmatch(queue.name):
            errors.append(
                ConfigError(
                    queue.path,
                    "name",
                    f"{queue.name!r} is not a valid queue name (1-64 of a-z A-Z 0-9 _ : # / @ -)",
                )
            )
        if queue.parent not in by_path:
            errors.append(ConfigError(queue.path, "parent", f"no queue {queue.parent!r}"))
        elif _in_cycle(queue, by_path, ending):
            errors.append(ConfigError(queue.path, "parent", "queue parents form a cycle"))
        elif queue.path != f"{queue.parent}.{queue.name}":
            errors.append(ConfigError(queue.path, "path", f"must be {queue.parent}.{queue.name}"))
    return errors


def _case_clash_errors(queues: Iterable[QueueConfig]) -> list[ConfigError]:
    """Siblings whose names differ only in case: YuniKorn lower-cases queue names, so to it they
    are one queue (its validator refuses them); the error names both spellings."""
    errors: list[ConfigError] = []
    first_spelling: dict[tuple[str | None, str], QueueConfig] = {}
    for queue in queues:
        if not isinstance(queue.name, str):
            continue
        key = (queue.parent.lower() if queue.parent else None, queue.name.lower())
        earlier = first_spelling.setdefault(key, queue)
        if earlier is not queue and earlier.name != queue.name:
            errors.append(
                ConfigError(
                    queue.path,
                    "name",
                    f"{queue.name!r} and {earlier.name!r} under {queue.parent} differ only in "
                    "case; YuniKorn compares queue names case-insensitively, so they would be one "
                    "queue",
                )
            )
    return errors


def _in_cycle(
    queue: QueueConfig, by_path: dict[str, QueueConfig], ending: set[str] | None = None
) -> bool:
    """True when following parents from ``queue`` never reaches a queue without one (or a
    parent that does not exist).

    ``ending`` collects the paths known to reach such an end; a walk stops at one, so checking
    every queue of a tree costs one step per queue rather than one per ancestor."""
    seen = {queue.path}
    parent = queue.parent
    while parent is not None:
        if ending is not None and parent in ending:
            break
        if parent in seen:
            return True
        seen.add(parent)
        following = by_path.get(parent)
        if following is None:
            break
        parent = following.parent
    if ending is not None:
        if by_path.get(queue.path) is not queue:  # a duplicate path: others walk the kept one
            seen.discard(queue.path)
        ending.update(seen)
    return False
