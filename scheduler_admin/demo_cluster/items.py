"""The items of a demo ingest body (an allocation, an ask) and the random draws the builder
and the churn share: users, priorities, QoS classes, and the base-36 tokens in ids.

Items are in the vocabulary of ``cluster.ingest.parsing``: quantities formatted as the scenario
files spell them, times in ISO 8601, optional fields left out when empty.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from preemption import resources as res

#: Priority clusters (value, weight); ``None`` draws a value in between.
PRIORITIES_FENCED = ((1000, 4), (100, 4), (0, 1), (None, 1))
PRIORITIES_OTHER = ((0, 9), (100, 6), (1000, 2), (None, 3))
QOS_FENCED = (("Guaranteed", 7), ("Burstable", 3))
QOS_OTHER = (("Guaranteed", 2), ("Burstable", 6), ("BestEffort", 2))
USERS = ("ana", "bo", "chen", "dara", "eli", "fatima", "gus", "hiro", "ines", "jon", "kai", "lea")
#: In the id of an ask for new work (not a requeued pod or a resubmitted gang).
NEW_ASK_MARK = "-ask-"

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def allocation_item(
    task_id: str,
    app: str,
    queue: str,
    user: str,
    node: str,
    amount: Mapping[str, int],
    *,
    priority: int,
    originator: bool,
    allow_preemption: bool,
    created_at: datetime,
    qos: str = "",
    job: str = "",
    pdb: str = "",
    required_node: str = "",
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": task_id,
        "app": app,
        "queue": queue,
        "user": user,
        "node": node,
        "resources": res.format_resources(amount),
        "priority": priority,
        "allow_preemption": allow_preemption,
        "originator": originator,
        "created_at": iso(created_at),
    }
    optional = {"qos": qos, "job": job, "pdb": pdb, "required_node": required_node}
    item.update({key: value for key, value in optional.items() if value})
    return item


def ask_item(
    ask_id: str,
    app: str,
    queue: str,
    user: str,
    amount: Mapping[str, int],
    *,
    priority: int,
    created_at: datetime,
    job: str = "",
    preemption_policy: str | None = None,
    required_node: str = "",
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": ask_id,
        "app": app,
        "queue": queue,
        "user": user,
        "resources": res.format_resources(amount),
        "priority": priority,
        "created_at": iso(created_at),
    }
    if job:
        item["job"] = job
    if preemption_policy:
        item["preemption_policy"] = preemption_policy
    if required_node:
        item["required_node"] = required_node
    return item


def draw_priority(rng: random.Random, clusters: Sequence[tuple[int | None, int]]) -> int:
    value = draw_weighted(rng, clusters)
    return rng.randint(1, 999) if value is None else value


def draw_weighted(rng: random.Random, choices: Sequence[tuple[Any, int]]) -> Any:
    return rng.choices([c for c, _ in choices], [w for _, w in choices])[0]


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def base36(number: int) -> str:
    digits = []
    while True:
        number, digit = divmod(number, 36)
        digits.append(_BASE36[digit])
        if not number:
            return "".join(reversed(digits))
