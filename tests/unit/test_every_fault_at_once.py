"""Validation lists every fault of a config in one answer (SPEC 3.2: "rejected whole, with every
broken rule listed"), however broken its tree is.

A duplicate or misnamed queue used to stop validation at the structure: a guarantee above its
max elsewhere showed up only once the structure was fixed. The rules between queues now run on
the sound part of the tree, and each broken queue's own values are checked anyway.
"""

from __future__ import annotations

from dataclasses import replace

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import is_validated, validate_config, with_settings

GI = 1024**3


def tree(*queues: QueueConfig) -> PartitionConfig:
    root = QueueConfig.child_of(None, "root")
    return PartitionConfig(PartitionSettings(name="p"), (root, *queues))


def q(parent: str, name: str, **fields) -> QueueConfig:
    return QueueConfig.child_of(parent, name, **fields)


def located(config: PartitionConfig) -> dict[str, str]:
    return {error.location: error.message for error in validate_config(config)}


def test_a_duplicate_name_does_not_hide_a_guarantee_above_max_elsewhere() -> None:
    errors = located(
        tree(
            q("root", "a"),
            q("root", "a"),
            q("root", "b", guaranteed={"memory": 10 * GI}, max={"memory": 5 * GI}),
        )
    )
    assert "duplicate queue name 'a'" in errors["queues[root.a].name"]
    assert "below guaranteed" in errors["queues[root.b].max.memory"]


def test_the_rules_between_queues_run_on_the_sound_part_only() -> None:
    """Below a queue whose place is broken the effective values are unknown: nothing there is
    compared with its parent, but its own values are still checked."""
    errors = located(
        tree(
            q("root", "a", max={"memory": 1 * GI}),
            q("root.a", "bad name", properties={"preemption.policy": "fencing"}),
            q("root.a.bad name", "c", max={"memory": 2 * GI}),  # under a broken queue
            q("root.a", "d", max={"memory": 2 * GI}),  # above its parent's 1Gi
        )
    )
    assert "is not a valid queue name" in errors["queues[root.a.bad name].name"]
    assert "is not one of" in errors["queues[root.a.bad name].properties.preemption.policy"]
    assert "above the parent's effective max" in errors["queues[root.a.d].max.memory"]
    assert "queues[root.a.bad name.c].max.memory" not in errors


def test_a_missing_root_still_checks_every_queues_own_values() -> None:
    config = PartitionConfig(
        PartitionSettings(name="p"),
        (q("nowhere", "a", properties={"preemption.delay": "soon"}),),
    )
    errors = located(config)
    assert "there must be exactly one top queue" in errors["partition.queues"]
    assert "is not a duration" in errors["queues[nowhere.a].properties.preemption.delay"]


def test_children_may_come_before_their_parents() -> None:
    """A JSON body may list them in any order (it failed with a KeyError: a 500)."""
    child = q("root.a", "b", guaranteed={"memory": 5 * GI})
    config = tree(child, q("root", "a", max={"memory": 4 * GI}))
    assert "children's guarantees add up to 5Gi" in located(config)["queues[root.a].max.memory"]


def test_other_settings_keep_the_queues_findings_and_are_checked_themselves() -> None:
    config = tree(q("root", "a", guaranteed={"memory": 2 * GI}, max={"memory": GI}))
    before = validate_config(config)
    changed = with_settings(config, replace(config.settings, miss_percent=101))
    assert is_validated(changed)
    assert validate_config(changed) == [
        *[error for error in validate_config(changed) if error.queue is None],
        *before,
    ]
    assert any(error.field == "miss_percent" for error in validate_config(changed))
