"""A queue's resources (SPEC 3.2): names and values that are quantities, guaranteed within max
and within the effective max of the queues above, and the children's guarantees within their
parent's."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from preemption import resources
from preemption.config import RESOURCE_NAME_MAX_LENGTH, ROOT, QueueConfig, shown, text_problem
from preemption.errors import ConfigError
from preemption.hierarchy.partition_settings import is_int
from preemption.hierarchy.tree import Hierarchy, sum_amounts


def resource_value_errors(queue: QueueConfig) -> list[ConfigError]:
    """Resource names and values that are not storable names and quantities >= 0."""
    errors: list[ConfigError] = []
    for kind in ("guaranteed", "max"):
        for name, value in getattr(queue, kind).items():
            if type(value) is int and value >= 0 and _good_resource_name(name):
                continue  # the common case, decided without building any message
            if not isinstance(name, str) or not name:
                errors.append(ConfigError(queue.path, kind, "resource names must be strings"))
            elif problem := text_problem(name):
                errors.append(
                    ConfigError(queue.path, f"{kind}.{shown(name)}", f"the name {problem}")
                )
            elif len(name) > RESOURCE_NAME_MAX_LENGTH:
                errors.append(
                    ConfigError(
                        queue.path,
                        kind,
                        f"resource names must be at most {RESOURCE_NAME_MAX_LENGTH} characters",
                    )
                )
            elif not is_int(value) or value < 0:
                errors.append(ConfigError(queue.path, f"{kind}.{name}", "must be a quantity >= 0"))
    return errors


@lru_cache(maxsize=1024)
def _good_resource_name(name: object) -> bool:
    """A resource name ``resource_value_errors`` accepts (a tree names the same few types on
    every queue, so each is checked once)."""
    return (
        type(name) is str
        and bool(name)
        and text_problem(name) is None
        and len(name) <= RESOURCE_NAME_MAX_LENGTH
    )


def queue_resource_errors(
    hierarchy: Hierarchy, queue: QueueConfig, passed_up: Mapping[str, Mapping[str, int]]
) -> list[ConfigError]:
    """Rules between the queue's own values, its parent and its children (SPEC 3.2)."""
    errors: list[ConfigError] = []
    if queue.path == ROOT:
        if queue.guaranteed or queue.max:
            errors.append(ConfigError(ROOT, "resources", "the root queue carries no resources"))
        return errors

    # One message per type, at the max (the value an admin lowers), naming both values: the
    # quota-delay rule below would otherwise report the same pair a second time.
    for name, value in queue.guaranteed.items():
        if name in queue.max and queue.max[name] < value:
            errors.append(
                ConfigError(
                    queue.path,
                    f"max.{name}",
                    f"max {name} {_fmt(name, queue.max[name])} is below guaranteed "
                    f"{_fmt(name, value)}",
                )
            )

    assert queue.parent is not None
    parent_max = hierarchy._effective_max(queue.parent)
    for name, value in queue.max.items():
        if name in parent_max and value > parent_max[name]:
            errors.append(
                ConfigError(
                    queue.path,
                    f"max.{name}",
                    f"max {_fmt(name, value)} is above the parent's effective max "
                    f"{_fmt(name, parent_max[name])}",
                )
            )

    errors.extend(_children_guarantee_errors(hierarchy, queue, passed_up))

    delay = hierarchy.effective_quota_delay(queue.path)
    if isinstance(delay.value, int) and delay.value > 0:
        for name, value in queue.guaranteed.items():
            if queue.max.get(name) == value:  # below it is reported above
                errors.append(
                    ConfigError(
                        queue.path,
                        f"max.{name}",
                        f"max must be greater than guaranteed ({_fmt(name, value)}) while "
                        f"quota.preemption.delay is set (from {delay.source})",
                    )
                )
    return errors


def _children_guarantee_errors(
    hierarchy: Hierarchy, queue: QueueConfig, passed_up: Mapping[str, Mapping[str, int]]
) -> list[ConfigError]:
    """The children's guarantees (each child's own, or what a child that sets none passes up
    from below) must fit this queue's guarantee, where it sets that type, and its effective
    max."""
    children = hierarchy.children(queue.path)
    if not children:
        return []
    total = sum_amounts(passed_up[child] for child in children)
    through = [child for child in children if passed_up[child] and not any(
        hierarchy.queues[child].guaranteed.values())]  # fmt: skip
    origin = (
        f" (with the guarantees below {', '.join(through)}, which sets no guarantee of its own "
        "and so passes its children's up, as YuniKorn counts them)"
        if through
        else ""
    )
    errors = []
    own_max = hierarchy._effective_max(queue.path)
    for name, value in sorted(total.items()):
        if name in queue.guaranteed and value > queue.guaranteed[name]:
            errors.append(
                ConfigError(
                    queue.path,
                    f"guaranteed.{name}",
                    f"children's guarantees add up to {_fmt(name, value)}, above this queue's "
                    f"guarantee {_fmt(name, queue.guaranteed[name])}{origin}",
                )
            )
        if name in own_max and value > own_max[name]:
            errors.append(
                ConfigError(
                    queue.path,
                    f"max.{name}",
                    f"children's guarantees add up to {_fmt(name, value)}, above this queue's "
                    f"effective max {_fmt(name, own_max[name])}{origin}",
                )
            )
    return errors


def _fmt(name: str, value: int) -> str:
    return resources.format_quantity(value, resource=name)
