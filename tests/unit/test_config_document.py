"""Tests for preemption.config: the JSON snapshot, config diffs and copy-on-write edits."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from preemption.config import (
    SNAPSHOT_FORMAT,
    FieldChange,
    PartitionConfig,
    PartitionSettings,
    QueueConfig,
    diff_configs,
)
from tests.unit.builders import GI, config, queue


def sample() -> PartitionConfig:
    return config(
        queue("root", properties={"application.sort.policy": "fifo"}, extra={"submitacl": "*"}),
        queue(
            "root.a",
            guaranteed={"memory": 4 * GI, "vcore": 2000},
            max={"memory": 8 * GI, "nvidia.com/gpu": 2},
            properties={"preemption.policy": "fence", "quota.preemption.delay": "1h"},
            extra={"maxapplications": 10, "parent": True},
        ),
        queue("root.a.x", max={"pods": 50}, properties={"preemption.delay": "45s"}),
        queue("root.ab"),
        queue("root.b"),
        name="gpu-pool",
        quota_preemption_enabled=True,
        miss_percent=5,
        default_preemption_delay=60,
        daemonset_preemption_delay=10,
        ask_policy="priority",
        victim_strategy=("multiple",),
        deviation_percent=25,
        max_victims=3,
        soft_eviction=True,
        enforcement="observe",
        max_evictions_per_minute=100,
        extra={"placementrules": [{"name": "provided", "create": False}]},
    )


# --------------------------------------------------------------------------------------------
# JSON snapshot
# --------------------------------------------------------------------------------------------


def test_snapshot_round_trips_through_json_text() -> None:
    original = sample()
    snapshot = json.loads(json.dumps(original.to_json()))
    assert PartitionConfig.from_json(snapshot) == original
    assert PartitionConfig.from_json(snapshot).to_json() == original.to_json()


def test_snapshot_layout() -> None:
    snapshot = sample().to_json()
    assert snapshot["format"] == SNAPSHOT_FORMAT
    assert snapshot["partition"] == {
        "name": "gpu-pool",
        "preemption_enabled": True,
        "quota_preemption_enabled": True,
        "miss_percent": 5,
        "default_preemption_delay": 60,
        "daemonset_preemption_delay": 10,
        "ask_policy": "priority",
        "victim_strategy": ["multiple"],
        "deviation_percent": 25,
        "max_victims": 3,
        "soft_eviction": True,
        "enforcement": "observe",
        "max_evictions_per_minute": 100,
        "approval": "none",
        "extra": {"placementrules": [{"name": "provided", "create": False}]},
    }
    assert [item["path"] for item in snapshot["queues"]] == [
        "root",
        "root.a",
        "root.a.x",
        "root.ab",
        "root.b",
    ]
    assert snapshot["queues"][1] == {
        "path": "root.a",
        "parent": "root",
        "name": "a",
        "guaranteed": {"memory": 4 * GI, "vcore": 2000},
        "max": {"memory": 8 * GI, "nvidia.com/gpu": 2},
        "properties": {"preemption.policy": "fence", "quota.preemption.delay": "1h"},
        "extra": {"maxapplications": 10, "parent": True},
    }


def test_snapshot_mappings_are_sorted_for_stable_storage() -> None:
    item = queue("root.a", max={"vcore": 1, "memory": 2}, properties={"z": "1", "a": "2"})
    snapshot = item.to_json()
    assert list(snapshot["max"]) == ["memory", "vcore"]
    assert list(snapshot["properties"]) == ["a", "z"]


def test_snapshot_keeps_queue_order() -> None:
    reordered = replace(sample(), queues=tuple(reversed(sample().queues)))
    assert PartitionConfig.from_json(reordered.to_json()).queues == reordered.queues


def test_minimal_snapshot_gets_the_defaults() -> None:
    loaded = PartitionConfig.from_json(
        {"partition": {"name": "p"}, "queues": [{"path": "root", "name": "root"}]}
    )
    assert loaded.settings == PartitionSettings(name="p")
    assert loaded.settings.default_preemption_delay == 30
    assert loaded.settings.daemonset_preemption_delay == 0
    assert loaded.settings.ask_policy == "inter_queue"
    assert loaded.settings.quota_preemption_enabled is False
    assert loaded.settings.victim_strategy == ("single", "multiple")
    assert (loaded.settings.deviation_percent, loaded.settings.max_victims) == (10, 5)
    assert loaded.settings.soft_eviction is False
    assert loaded.queues == (QueueConfig(path="root", parent=None, name="root"),)


def test_from_json_copies_mappings() -> None:
    snapshot = sample().to_json()
    loaded = PartitionConfig.from_json(snapshot)
    snapshot["queues"][1]["max"]["memory"] = 1
    snapshot["partition"]["extra"]["placementrules"] = []
    assert loaded.queue("root.a").max["memory"] == 8 * GI  # type: ignore[union-attr]
    assert loaded.settings.extra["placementrules"] == [{"name": "provided", "create": False}]


# --------------------------------------------------------------------------------------------
# lookups
# --------------------------------------------------------------------------------------------


def test_lookups_by_path() -> None:
    document = sample()
    assert document.name == "gpu-pool"
    assert document.queue("root.a.x") == queue(
        "root.a.x", max={"pods": 50}, properties={"preemption.delay": "45s"}
    )
    assert document.queue("root.nope") is None
    assert [q.path for q in document.children("root")] == ["root.a", "root.ab", "root.b"]
    assert document.children("root.b") == []
    assert list(document.queues_by_path()) == ["root", "root.a", "root.a.x", "root.ab", "root.b"]


def test_child_of_builds_path_from_parent_and_name() -> None:
    assert QueueConfig.child_of(None, "root") == QueueConfig(path="root", parent=None, name="root")
    child = QueueConfig.child_of("root.a", "b", max={"pods": 1})
    assert (child.path, child.parent, child.name, child.max) == (
        "root.a.b",
        "root.a",
        "b",
        {"pods": 1},
    )


# --------------------------------------------------------------------------------------------
# with_queue / without_subtree
# --------------------------------------------------------------------------------------------


def test_with_queue_replaces_a_queue_in_place() -> None:
    original = sample()
    updated = replace(original.queue("root.a"), max={"memory": 16 * GI})  # type: ignore[type-var]
    changed = original.with_queue(updated)
    assert [q.path for q in changed.queues] == [q.path for q in original.queues]
    assert changed.queue("root.a") == updated
    assert original.queue("root.a").max == {"memory": 8 * GI, "nvidia.com/gpu": 2}  # type: ignore[union-attr]
    assert changed.settings == original.settings


def test_with_queue_appends_a_new_queue() -> None:
    original = sample()
    changed = original.with_queue(queue("root.b.new", guaranteed={"pods": 3}))
    assert changed.queues[-1] == queue("root.b.new", guaranteed={"pods": 3})
    assert len(changed.queues) == len(original.queues) + 1
    assert original.queue("root.b.new") is None


def test_without_subtree_removes_the_queue_and_its_descendants_only() -> None:
    original = sample()
    pruned = original.without_subtree("root.a")
    assert [q.path for q in pruned.queues] == ["root", "root.ab", "root.b"]
    assert [q.path for q in original.queues] == ["root", "root.a", "root.a.x", "root.ab", "root.b"]


def test_without_subtree_of_an_unknown_path_changes_nothing() -> None:
    assert sample().without_subtree("root.zzz") == sample()


# --------------------------------------------------------------------------------------------
# diff_configs
# --------------------------------------------------------------------------------------------


def test_equal_configs_have_no_changes() -> None:
    assert diff_configs(sample(), sample()) == []
    assert diff_configs(sample(), PartitionConfig.from_json(sample().to_json())) == []


def test_queue_order_alone_is_not_a_change() -> None:
    reordered = replace(sample(), queues=tuple(reversed(sample().queues)))
    assert diff_configs(sample(), reordered) == []


def test_changed_resource_is_reported_per_key() -> None:
    old = sample()
    a = old.queue("root.a")
    assert a is not None
    new = old.with_queue(replace(a, max={"memory": 6 * GI, "nvidia.com/gpu": 2}))
    assert diff_configs(old, new) == [FieldChange("root.a", "max.memory", 8 * GI, 6 * GI)]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        pytest.param(
            "max",
            {"memory": 8 * GI},
            [FieldChange("root.a", "max.nvidia.com/gpu", 2, None)],
            id="type-removed-from-max",
        ),
        pytest.param(
            "guaranteed",
            {"memory": 4 * GI, "vcore": 2000, "pods": 7},
            [FieldChange("root.a", "guaranteed.pods", None, 7)],
            id="type-added-to-guaranteed",
        ),
        pytest.param(
            "properties",
            {"preemption.policy": "disabled", "quota.preemption.delay": "1h"},
            [FieldChange("root.a", "properties.preemption.policy", "fence", "disabled")],
            id="property-changed",
        ),
        pytest.param(
            "properties",
            {},
            [
                FieldChange("root.a", "properties.preemption.policy", "fence", None),
                FieldChange("root.a", "properties.quota.preemption.delay", "1h", None),
            ],
            id="properties-removed",
        ),
        pytest.param(
            "extra",
            {"maxapplications": 20, "parent": True},
            [FieldChange("root.a", "extra.maxapplications", 10, 20)],
            id="kept-yunikorn-key",
        ),
    ],
)
def test_changed_queue_fields_are_reported_per_key(
    field: str, value: dict, expected: list[FieldChange]
) -> None:
    old = sample()
    a = old.queue("root.a")
    assert a is not None
    assert diff_configs(old, old.with_queue(replace(a, **{field: value}))) == expected


def test_added_and_removed_queues_are_one_change_each() -> None:
    old = sample()
    new = old.without_subtree("root.a").with_queue(queue("root.c", max={"pods": 5}))
    assert diff_configs(old, new) == [
        FieldChange("root.a", "queue", "removed", None),
        FieldChange("root.a.x", "queue", "removed", None),
        FieldChange("root.c", "queue", None, "added"),
    ]


def test_partition_setting_changes_are_reported() -> None:
    old = sample()
    new = replace(
        old,
        settings=replace(old.settings, miss_percent=10, ask_policy="inter_queue", extra={}),
    )
    assert diff_configs(old, new) == [
        FieldChange(None, "miss_percent", 5, 10),
        FieldChange(None, "ask_policy", "priority", "inter_queue"),
        FieldChange(None, "extra", {"placementrules": [{"name": "provided", "create": False}]}, {}),
    ]


def test_settings_changes_come_before_queue_changes_in_a_stable_order() -> None:
    old = sample()
    b = old.queue("root.b")
    a_x = old.queue("root.a.x")
    assert b is not None and a_x is not None
    new = replace(
        old.with_queue(replace(b, max={"pods": 1})).with_queue(
            replace(a_x, properties={"preemption.delay": "1m"})
        ),
        settings=replace(old.settings, quota_preemption_enabled=False),
    )
    changes = diff_configs(old, new)
    assert changes == [
        FieldChange(None, "quota_preemption_enabled", True, False),
        FieldChange("root.a.x", "properties.preemption.delay", "45s", "1m"),
        FieldChange("root.b", "max.pods", None, 1),
    ]
    assert changes[0].to_json() == {
        "queue": None,
        "field": "quota_preemption_enabled",
        "old": True,
        "new": False,
    }
