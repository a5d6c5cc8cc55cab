"""Tests for preemption.hierarchy: the validation rules and effective values of SPEC 3.2."""

from __future__ import annotations

import pytest

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import (
    ConfigError,
    ConfigErrors,
    Effective,
    Hierarchy,
    config_notices,
    validate_config,
)
from tests.unit.builders import GI, config, locations, only_error, queue

# --------------------------------------------------------------------------------------------
# ConfigError locations
# --------------------------------------------------------------------------------------------


def test_error_location_names_queue_and_field() -> None:
    assert ConfigError("root.a", "max.memory", "x").location == "queues[root.a].max.memory"
    assert ConfigError("root.a", "", "x").location == "queues[root.a]"
    assert ConfigError(None, "miss_percent", "x").location == "partition.miss_percent"
    assert ConfigError(None, "", "x").location == "partition"
    assert str(ConfigError("root.a", "name", "bad")) == "queues[root.a].name: bad"


def test_explicit_location_replaces_the_computed_one() -> None:
    error = ConfigError("root.a", "max.memory", "x", at="partitions[0].queues[0]")
    assert error.location == "partitions[0].queues[0]"


def test_config_errors_lists_every_error_in_its_message() -> None:
    errors = [ConfigError("root.a", "name", "bad"), ConfigError(None, "ask_policy", "worse")]
    raised = ConfigErrors(errors)
    assert raised.errors == errors
    assert str(raised) == "queues[root.a].name: bad; partition.ask_policy: worse"


def test_a_realistic_config_is_valid() -> None:
    valid = config(
        queue("root.prod", guaranteed={"memory": 64 * GI}, max={"memory": 128 * GI}),
        queue(
            "root.prod.web",
            guaranteed={"memory": 32 * GI, "vcore": 16000},
            max={"memory": 64 * GI, "vcore": 32000, "nvidia.com/gpu": 2},
            properties={"preemption.policy": "fence", "quota.preemption.delay": "1h"},
        ),
        queue(
            "root.prod.batch",
            guaranteed={"memory": 32 * GI},
            properties={"preemption.delay": "45s"},
        ),
        queue("root.dev", max={"pods": 100}, properties={"preemption.policy": "disabled"}),
    )
    assert validate_config(valid) == []


# --------------------------------------------------------------------------------------------
# guaranteed <= max
# --------------------------------------------------------------------------------------------


def test_guaranteed_above_own_max_is_refused() -> None:
    errors = validate_config(
        config(queue("root.a", guaranteed={"memory": 20 * GI}, max={"memory": 10 * GI}))
    )
    error = only_error(errors)
    assert error.location == "queues[root.a].max.memory"
    assert error.message == "max memory 10Gi is below guaranteed 20Gi"


@pytest.mark.parametrize("delay", ["60s", None], ids=["with-quota-delay", "without"])
def test_max_below_guaranteed_is_one_message_even_with_a_quota_delay(delay: str | None) -> None:
    """The quota-delay rule (max must be above guaranteed) does not repeat the same pair."""
    properties = {"quota.preemption.delay": delay} if delay else {}
    errors = validate_config(
        config(
            queue(
                "root.a",
                guaranteed={"memory": 20 * GI, "vcore": 4000},
                max={"memory": 10 * GI, "vcore": 8000},
                properties=properties,
            )
        )
    )
    assert [str(error) for error in errors] == [
        "queues[root.a].max.memory: max memory 10Gi is below guaranteed 20Gi"
    ]


@pytest.mark.parametrize(
    ("guaranteed", "maximum"),
    [
        pytest.param({"memory": 10 * GI}, {"memory": 10 * GI}, id="equal"),
        pytest.param({"memory": 5 * GI}, {"memory": 10 * GI}, id="below"),
        pytest.param({"memory": 5 * GI, "vcore": 99000}, {"memory": 10 * GI}, id="type-not-in-max"),
        pytest.param({"memory": 500 * GI}, {}, id="no-max-at-all"),
    ],
)
def test_guaranteed_within_own_max_passes(guaranteed: dict, maximum: dict) -> None:
    assert validate_config(config(queue("root.a", guaranteed=guaranteed, max=maximum))) == []


def test_each_type_of_guaranteed_above_max_is_reported() -> None:
    errors = validate_config(
        config(
            queue(
                "root.a",
                guaranteed={"memory": 20 * GI, "vcore": 4000, "pods": 9},
                max={"memory": 10 * GI, "vcore": 8000, "pods": 8},
            )
        )
    )
    assert locations(errors) == [
        "queues[root.a].max.memory",
        "queues[root.a].max.pods",
    ]


# --------------------------------------------------------------------------------------------
# child max <= parent's effective max
# --------------------------------------------------------------------------------------------


def test_child_max_above_parent_max_is_refused() -> None:
    errors = validate_config(
        config(
            queue("root.a", max={"memory": 10 * GI}),
            queue("root.a.b", max={"memory": 11 * GI}),
        )
    )
    error = only_error(errors)
    assert error.location == "queues[root.a.b].max.memory"
    assert "above the parent's effective max" in error.message


def test_child_max_above_grandparent_limit_is_refused_when_parent_sets_no_max() -> None:
    errors = validate_config(
        config(
            queue("root.a", max={"memory": 10 * GI, "vcore": 4000}),
            queue("root.a.b"),
            queue("root.a.b.c", max={"memory": 20 * GI, "vcore": 4000}),
        )
    )
    error = only_error(errors)
    assert error.location == "queues[root.a.b.c].max.memory"
    assert "effective max" in error.message


def test_child_max_is_compared_with_the_tightest_limit_on_the_path() -> None:
    # root.a limits memory to 10G, root.a.b only vcore: root.a.b's effective max has both.
    errors = validate_config(
        config(
            queue("root.a", max={"memory": 10 * GI}),
            queue("root.a.b", max={"vcore": 8000}),
            queue("root.a.b.c", max={"memory": 10 * GI, "vcore": 9000}),
        )
    )
    assert locations(errors) == ["queues[root.a.b.c].max.vcore"]


@pytest.mark.parametrize(
    "child_max",
    [
        pytest.param({"memory": 10 * GI}, id="equal"),
        pytest.param({"memory": 1 * GI}, id="below"),
        pytest.param({"nvidia.com/gpu": 8}, id="type-parent-does-not-limit"),
        pytest.param({}, id="no-max"),
    ],
)
def test_child_max_within_parent_max_passes(child_max: dict) -> None:
    valid = config(queue("root.a", max={"memory": 10 * GI}), queue("root.a.b", max=child_max))
    assert validate_config(valid) == []


# --------------------------------------------------------------------------------------------
# sum of children's guarantees
# --------------------------------------------------------------------------------------------


def test_children_guarantees_above_parent_guarantee_are_refused() -> None:
    errors = validate_config(
        config(
            queue("root.a", guaranteed={"memory": 10 * GI}),
            queue("root.a.x", guaranteed={"memory": 6 * GI}),
            queue("root.a.y", guaranteed={"memory": 5 * GI}),
        )
    )
    error = only_error(errors)
    assert error.location == "queues[root.a].guaranteed.memory"
    assert "children's guarantees add up to 11Gi" in error.message
    assert "guarantee 10Gi" in error.message


def test_children_guarantees_equal_to_parent_guarantee_pass() -> None:
    valid = config(
        queue("root.a", guaranteed={"memory": 10 * GI}),
        queue("root.a.x", guaranteed={"memory": 6 * GI}),
        queue("root.a.y", guaranteed={"memory": 4 * GI}),
    )
    assert validate_config(valid) == []


def test_children_guarantees_of_a_type_the_parent_does_not_guarantee_pass() -> None:
    valid = config(
        queue("root.a", guaranteed={"memory": 10 * GI}),
        queue("root.a.x", guaranteed={"vcore": 60000}),
        queue("root.a.y", guaranteed={"vcore": 50000}),
    )
    assert validate_config(valid) == []


def test_children_guarantees_above_parent_max_are_refused() -> None:
    errors = validate_config(
        config(
            queue("root.a", max={"memory": 10 * GI}),
            queue("root.a.x", guaranteed={"memory": 6 * GI}),
            queue("root.a.y", guaranteed={"memory": 5 * GI}),
        )
    )
    error = only_error(errors)
    assert error.location == "queues[root.a].max.memory"
    assert "above this queue's effective max 10Gi" in error.message


def test_children_guarantees_above_the_parents_inherited_max_are_refused() -> None:
    # root.a.b sets no max; its effective max is root.a's.
    errors = validate_config(
        config(
            queue("root.a", max={"memory": 10 * GI}),
            queue("root.a.b"),
            queue("root.a.b.x", guaranteed={"memory": 6 * GI}),
            queue("root.a.b.y", guaranteed={"memory": 6 * GI}),
        )
    )
    # root.a.b sets no guarantee, so YuniKorn passes its children's 12Gi up to root.a too.
    assert [error.location for error in errors] == [
        "queues[root.a].max.memory",
        "queues[root.a.b].max.memory",
    ]
    assert all("12Gi" in error.message for error in errors)
    assert "passes its children's up" in errors[0].message


def test_guarantee_rule_passes_through_a_parent_without_guarantee__checkQueueResource() -> None:
    # YuniKorn's checkQueueResource: a queue whose guarantee is zero counts as the sum of its
    # children's in its parent's check, so root.a (3Gi) cannot hold root.a.b's children's 4Gi.
    refused = config(
        queue("root.a", guaranteed={"memory": 3 * GI}),
        queue("root.a.b"),
        queue("root.a.b.x", guaranteed={"memory": 2 * GI}),
        queue("root.a.b.y", guaranteed={"memory": 2 * GI}),
    )
    error = only_error(validate_config(refused))
    assert error.location == "queues[root.a].guaranteed.memory"
    assert "4Gi" in error.message and "root.a.b" in error.message
    accepted = config(
        queue("root.a", guaranteed={"memory": 4 * GI}),
        queue("root.a.b"),
        queue("root.a.b.x", guaranteed={"memory": 2 * GI}),
        queue("root.a.b.y", guaranteed={"memory": 2 * GI}),
    )
    assert validate_config(accepted) == []


def test_guarantee_rule_stops_at_a_parent_that_sets_a_guarantee__checkQueueResource() -> None:
    # A parent that guarantees anything passes up its own guarantee, not its children's: here
    # root.a.b guarantees only vcore, so its children's memory never reaches root.a's check.
    accepted = config(
        queue("root.a", guaranteed={"memory": 1 * GI}),
        queue("root.a.b", guaranteed={"vcore": 1000}),
        queue("root.a.b.x", guaranteed={"memory": 2 * GI}),
    )
    assert validate_config(accepted) == []
    # A guarantee of zero is no guarantee: it passes the children's sum up.
    refused = config(
        queue("root.a", guaranteed={"memory": 1 * GI}),
        queue("root.a.b", guaranteed={"memory": 0}),
        queue("root.a.b.x", guaranteed={"memory": 2 * GI}),
    )
    assert [e.location for e in validate_config(refused)] == [
        "queues[root.a].guaranteed.memory",
        "queues[root.a.b].guaranteed.memory",
    ]


def test_sibling_names_differing_only_in_case_are_refused__checkQueues() -> None:
    error = only_error(validate_config(config(queue("root.Test"), queue("root.test"))))
    assert error.location == "queues[root.test].name"
    assert "'test' and 'Test'" in error.message
    cousins = config(queue("root.a"), queue("root.b"), queue("root.a.Test"), queue("root.b.test"))
    assert validate_config(cousins) == []


def test_children_guarantees_within_parent_max_pass() -> None:
    valid = config(
        queue("root.a", max={"memory": 10 * GI}),
        queue("root.a.x", guaranteed={"memory": 5 * GI}),
        queue("root.a.y", guaranteed={"memory": 5 * GI, "pods": 1000}),
    )
    assert validate_config(valid) == []


# --------------------------------------------------------------------------------------------
# structure: cycles, parents, names, root
# --------------------------------------------------------------------------------------------


def test_queues_whose_parents_point_at_each_other_are_a_cycle() -> None:
    cyclic = PartitionConfig(
        settings=PartitionSettings(name="default"),
        queues=(
            QueueConfig(path="root", parent=None, name="root"),
            QueueConfig(path="root.x", parent="root.y", name="x"),
            QueueConfig(path="root.y", parent="root.x", name="y"),
        ),
    )
    errors = validate_config(cyclic)
    assert locations(errors) == ["queues[root.x].parent", "queues[root.y].parent"]
    assert all("cycle" in error.message for error in errors)


def test_a_queue_that_is_its_own_parent_is_a_cycle() -> None:
    cyclic = config(QueueConfig(path="root.x", parent="root.x", name="x"))
    error = only_error(validate_config(cyclic))
    assert error.location == "queues[root.x].parent"
    assert "cycle" in error.message


def test_a_queue_whose_parent_does_not_exist_is_refused() -> None:
    error = only_error(validate_config(config(queue("root.missing.a"))))
    assert error.location == "queues[root.missing.a].parent"
    assert "no queue 'root.missing'" in error.message


def test_a_path_that_does_not_match_parent_and_name_is_refused() -> None:
    error = only_error(validate_config(config(QueueConfig(path="root.a", parent="root", name="b"))))
    assert error.location == "queues[root.a].path"
    assert "root.b" in error.message


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a" * 65, id="65-chars"),
        pytest.param("has space", id="space"),
        pytest.param("bang!", id="exclamation"),
        pytest.param("dot.ted", id="dot"),
        pytest.param("", id="empty"),
        pytest.param("ünïcode", id="non-ascii"),
        pytest.param("trailing-newline\n", id="trailing-newline"),
    ],
)
def test_invalid_queue_names_are_refused(name: str) -> None:
    bad = config(QueueConfig(path=f"root.{name}", parent="root", name=name))
    error = only_error(validate_config(bad))
    assert error.location == f"queues[root.{name}].name"
    assert "is not a valid queue name" in error.message


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a" * 64, id="64-chars"),
        pytest.param("x", id="1-char"),
        pytest.param("team/ml#gpu@east:1", id="slash-hash-at-colon"),
        pytest.param("under_score-dash", id="underscore-dash"),
        pytest.param("UPPER123", id="upper-digits"),
    ],
)
def test_valid_queue_names_pass(name: str) -> None:
    assert validate_config(config(queue(f"root.{name}"))) == []


def test_duplicate_sibling_names_are_refused() -> None:
    errors = validate_config(config(queue("root.a"), queue("root.b"), queue("root.a")))
    error = only_error(errors)
    assert error.location == "queues[root.a].name"
    assert "duplicate" in error.message


def test_the_same_name_under_different_parents_passes() -> None:
    valid = config(queue("root.a"), queue("root.b"), queue("root.a.x"), queue("root.b.x"))
    assert validate_config(valid) == []


@pytest.mark.parametrize(
    "queues",
    [
        pytest.param((), id="no-queues"),
        pytest.param((QueueConfig(path="top", parent=None, name="top"),), id="root-not-named-root"),
        pytest.param(
            (
                QueueConfig(path="root", parent=None, name="root"),
                QueueConfig(path="other", parent=None, name="other"),
            ),
            id="two-roots",
        ),
    ],
)
def test_there_must_be_exactly_one_root(queues: tuple[QueueConfig, ...]) -> None:
    bad = PartitionConfig(settings=PartitionSettings(name="default"), queues=queues)
    errors = validate_config(bad)
    assert "partition.queues" in locations(errors)
    assert any("exactly one top queue" in error.message for error in errors)


def test_a_config_with_only_root_is_valid() -> None:
    assert validate_config(config()) == []


@pytest.mark.parametrize(
    "root",
    [
        pytest.param(queue("root", max={"memory": GI}), id="max"),
        pytest.param(queue("root", guaranteed={"vcore": 1000}), id="guaranteed"),
    ],
)
def test_root_carries_no_resources(root: QueueConfig) -> None:
    error = only_error(validate_config(config(root)))
    assert error.location == "queues[root].resources"
    assert "carries no resources" in error.message


def test_root_may_carry_properties() -> None:
    assert validate_config(config(queue("root", properties={"preemption.policy": "fence"}))) == []


def test_structural_errors_are_all_reported() -> None:
    errors = validate_config(
        config(queue("root.bad name"), queue("root.gone.a"), queue("root.x"), queue("root.x"))
    )
    assert locations(errors) == [
        "queues[root.bad name].name",
        "queues[root.gone.a].parent",
        "queues[root.x].name",
    ]


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy", ["default", "fence", "disabled", "FENCE", "Disabled", "DeFaUlT", " fence "]
)
def test_known_preemption_policies_pass_in_any_case(policy: str) -> None:
    assert validate_config(config(queue("root.a", properties={"preemption.policy": policy}))) == []


@pytest.mark.parametrize("policy", ["fencing", "", "none", "enabled", "fence,disabled"])
def test_unknown_preemption_policies_are_refused(policy: str) -> None:
    errors = validate_config(config(queue("root.a", properties={"preemption.policy": policy})))
    error = only_error(errors)
    assert error.location == "queues[root.a].properties.preemption.policy"
    assert "is not one of default, fence, disabled" in error.message


@pytest.mark.parametrize(
    "delay", ["30s", "1", "5m", "1h30m", "90", "50ms", "1.5m", "1h0m30s", "30m1h", "+5s"]
)
def test_positive_preemption_delays_pass(delay: str) -> None:
    assert validate_config(config(queue("root.a", properties={"preemption.delay": delay}))) == []


@pytest.mark.parametrize(
    ("delay", "fragment"),
    [
        ("0s", "must be more than 0s"),
        ("0", "must be more than 0s"),
        ("0ms", "must be more than 0s"),
        ("abc", "is not a duration"),
        ("-5", "must not be negative"),
        ("-1ms", "must not be negative"),
        ("1.5", "has no unit"),
        ("5 s", "unknown unit"),
    ],
)
def test_invalid_preemption_delays_are_refused(delay: str, fragment: str) -> None:
    errors = validate_config(config(queue("root.a", properties={"preemption.delay": delay})))
    error = only_error(errors)
    assert error.location == "queues[root.a].properties.preemption.delay"
    assert fragment in error.message


@pytest.mark.parametrize("delay", ["0", "0s", "7200", "2h", "1h30m"])
def test_non_negative_quota_preemption_delays_pass(delay: str) -> None:
    valid = config(queue("root.a", properties={"quota.preemption.delay": delay}))
    assert validate_config(valid) == []


@pytest.mark.parametrize(
    ("delay", "fragment"),
    [("-5", "must not be negative"), ("soon", "is not a duration"), ("1d", "unknown unit")],
)
def test_invalid_quota_preemption_delays_are_refused(delay: str, fragment: str) -> None:
    errors = validate_config(config(queue("root.a", properties={"quota.preemption.delay": delay})))
    error = only_error(errors)
    assert error.location == "queues[root.a].properties.quota.preemption.delay"
    assert fragment in error.message


def test_unrecognised_properties_are_kept_without_complaint() -> None:
    valid = config(queue("root.a", properties={"application.sort.policy": "fifo"}))
    assert validate_config(valid) == []


def test_non_string_property_values_are_refused() -> None:
    bad = config(queue("root.a", properties={"priority.offset": 5}))  # type: ignore[dict-item]
    error = only_error(validate_config(bad))
    assert error.location == "queues[root.a].properties.priority.offset"


def test_negative_resource_quantities_are_refused() -> None:
    error = only_error(validate_config(config(queue("root.a", max={"memory": -1}))))
    assert error.location == "queues[root.a].max.memory"
    assert "quantity >= 0" in error.message


# --------------------------------------------------------------------------------------------
# partition settings
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "location", "fragment"),
    [
        ({"miss_percent": -1}, "partition.miss_percent", "0 to 100"),
        ({"miss_percent": 101}, "partition.miss_percent", "0 to 100"),
        ({"miss_percent": 5.5}, "partition.miss_percent", "integer"),
        ({"default_preemption_delay": -1}, "partition.default_preemption_delay", ">= 0"),
        ({"daemonset_preemption_delay": -1}, "partition.daemonset_preemption_delay", ">= 0"),
        ({"default_preemption_delay": "30s"}, "partition.default_preemption_delay", "seconds"),
        ({"ask_policy": "fifo"}, "partition.ask_policy", "inter_queue, priority"),
        ({"ask_policy": "Priority"}, "partition.ask_policy", "inter_queue, priority"),
        ({"name": "bad name"}, "partition.name", "not a valid name"),
        ({"name": ""}, "partition.name", "not a valid name"),
        ({"name": "p" * 65}, "partition.name", "not a valid name"),
        (
            {"quota_preemption_enabled": "yes"},
            "partition.quota_preemption_enabled",
            "true or false",
        ),
    ],
)
def test_invalid_partition_settings_are_refused(
    settings: dict, location: str, fragment: str
) -> None:
    error = only_error(validate_config(config(**settings)))
    assert error.location == location
    assert fragment in error.message


@pytest.mark.parametrize(
    "settings",
    [
        {"miss_percent": 0},
        {"miss_percent": 100},
        {"default_preemption_delay": 0, "daemonset_preemption_delay": 0},
        {"default_preemption_delay": 3600, "daemonset_preemption_delay": 60},
        {"ask_policy": "inter_queue"},
        {"ask_policy": "priority"},
        {"name": "gpu-pool_2"},
        {"quota_preemption_enabled": True, "preemption_enabled": False},
    ],
)
def test_valid_partition_settings_pass(settings: dict) -> None:
    assert validate_config(config(**settings)) == []


# --------------------------------------------------------------------------------------------
# meaningful quota decrease (seed 001)
# --------------------------------------------------------------------------------------------

EQUAL = {"memory": 10 * GI}


def test_max_equal_to_guaranteed_is_refused_when_the_queue_sets_a_quota_delay() -> None:
    errors = validate_config(
        config(
            queue(
                "root.a", guaranteed=EQUAL, max=EQUAL, properties={"quota.preemption.delay": "1h"}
            )
        )
    )
    error = only_error(errors)
    assert error.location == "queues[root.a].max.memory"
    assert "max must be greater than guaranteed (10Gi)" in error.message
    assert "from root.a" in error.message


def test_max_equal_to_guaranteed_is_refused_when_the_quota_delay_is_inherited() -> None:
    errors = validate_config(
        config(
            queue("root.a", properties={"quota.preemption.delay": "7200"}),
            queue("root.a.b"),
            queue("root.a.b.c", guaranteed=EQUAL, max=EQUAL),
        )
    )
    error = only_error(errors)
    assert error.location == "queues[root.a.b.c].max.memory"
    assert "from root.a)" in error.message


@pytest.mark.parametrize(
    "properties",
    [
        pytest.param({}, id="absent"),
        pytest.param({"quota.preemption.delay": "0"}, id="zero"),
        pytest.param({"quota.preemption.delay": "0s"}, id="zero-seconds"),
    ],
)
def test_max_equal_to_guaranteed_passes_without_a_quota_delay(properties: dict) -> None:
    valid = config(queue("root.a", guaranteed=EQUAL, max=EQUAL, properties=properties))
    assert validate_config(valid) == []


def test_a_nearer_zero_quota_delay_switches_the_rule_off_for_the_subtree() -> None:
    valid = config(
        queue("root.a", properties={"quota.preemption.delay": "1h"}),
        queue("root.a.b", properties={"quota.preemption.delay": "0"}),
        queue("root.a.b.c", guaranteed=EQUAL, max=EQUAL),
    )
    assert validate_config(valid) == []


def test_a_quota_delay_on_a_sibling_does_not_apply() -> None:
    valid = config(
        queue("root.a", properties={"quota.preemption.delay": "1h"}),
        queue("root.b", guaranteed=EQUAL, max=EQUAL),
    )
    assert validate_config(valid) == []


@pytest.mark.parametrize(
    ("guaranteed", "maximum"),
    [
        pytest.param({"memory": 10 * GI}, {"memory": 10 * GI + 1}, id="max-greater"),
        pytest.param({"memory": 10 * GI}, {"vcore": 4000}, id="disjoint-types"),
        pytest.param(
            {"memory": 10 * GI, "vcore": 4000}, {"memory": 20 * GI}, id="vcore-only-guaranteed"
        ),
        pytest.param({"memory": 10 * GI}, {"memory": 20 * GI, "pods": 10}, id="pods-only-max"),
        pytest.param({"memory": 10 * GI}, {}, id="no-max"),
        pytest.param({}, {"memory": 10 * GI}, id="no-guarantee"),
    ],
)
def test_meaningful_quota_decrease_passes_when_max_exceeds_guaranteed_on_shared_types(
    guaranteed: dict, maximum: dict
) -> None:
    valid = config(
        queue(
            "root.a",
            guaranteed=guaranteed,
            max=maximum,
            properties={"quota.preemption.delay": "30m"},
        )
    )
    assert validate_config(valid) == []


def test_meaningful_quota_decrease_reports_each_shared_type_that_is_not_above() -> None:
    errors = validate_config(
        config(
            queue(
                "root.a",
                guaranteed={"memory": 10 * GI, "vcore": 4000, "pods": 5},
                max={"memory": 10 * GI, "vcore": 8000, "pods": 5},
                properties={"quota.preemption.delay": "30m"},
            )
        )
    )
    assert locations(errors) == ["queues[root.a].max.memory", "queues[root.a].max.pods"]


def test_meaningful_quota_decrease_applies_to_parent_queues_too() -> None:
    errors = validate_config(
        config(
            queue(
                "root.a",
                guaranteed=EQUAL,
                max=EQUAL,
                properties={"quota.preemption.delay": "30m"},
            ),
            queue("root.a.b"),
        )
    )
    assert locations(errors) == ["queues[root.a].max.memory"]


# --------------------------------------------------------------------------------------------
# every broken rule at once
# --------------------------------------------------------------------------------------------


def test_every_broken_rule_is_reported_at_once() -> None:
    errors = validate_config(
        config(
            queue("root.a", guaranteed={"memory": 20 * GI}, max={"memory": 10 * GI}),
            queue("root.b", max={"vcore": 4000}, properties={"preemption.policy": "fencing"}),
            queue("root.b.c", max={"vcore": 8000}),
            miss_percent=150,
        )
    )
    assert locations(errors) == [
        "partition.miss_percent",
        "queues[root.a].max.memory",
        "queues[root.b.c].max.vcore",
        "queues[root.b].properties.preemption.policy",
    ]


def test_errors_of_several_queues_and_kinds_are_all_listed() -> None:
    errors = validate_config(
        config(
            queue("root.a", properties={"preemption.delay": "0s", "quota.preemption.delay": "-1"}),
            queue(
                "root.b",
                guaranteed=EQUAL,
                max=EQUAL,
                properties={"quota.preemption.delay": "1h"},
            ),
            ask_policy="random",
            default_preemption_delay=-3,
        )
    )
    assert locations(errors) == [
        "partition.ask_policy",
        "partition.default_preemption_delay",
        "queues[root.a].properties.preemption.delay",
        "queues[root.a].properties.quota.preemption.delay",
        "queues[root.b].max.memory",
    ]


# --------------------------------------------------------------------------------------------
# notices
# --------------------------------------------------------------------------------------------


def test_preemption_delay_on_a_parent_gives_a_notice() -> None:
    notices = config_notices(
        config(queue("root.a", properties={"preemption.delay": "5m"}), queue("root.a.b"))
    )
    notice = only_error(notices)
    assert notice.location == "queues[root.a].properties.preemption.delay"
    assert "leaf queues only" in notice.message


def test_preemption_delay_on_a_leaf_gives_no_notice() -> None:
    notices = config_notices(
        config(queue("root.a"), queue("root.a.b", properties={"preemption.delay": "5m"}))
    )
    assert notices == []


def test_a_parent_preemption_delay_is_valid_though_noticed() -> None:
    noticed = config(queue("root.a", properties={"preemption.delay": "5m"}), queue("root.a.b"))
    assert validate_config(noticed) == []


# --------------------------------------------------------------------------------------------
# Hierarchy: tree navigation and effective values
# --------------------------------------------------------------------------------------------


def tree() -> Hierarchy:
    return Hierarchy(
        config(
            queue("root.a", max={"memory": 10 * GI, "vcore": 8000}),
            queue("root.a.b", max={"memory": 20 * GI, "pods": 10}),
            queue("root.a.b.c", max={"memory": 5 * GI}),
            queue("root.a.d"),
            queue("root.e"),
        )
    )


def test_hierarchy_navigates_children_ancestors_and_leaves() -> None:
    hierarchy = tree()
    assert hierarchy.children("root") == ["root.a", "root.e"]
    assert hierarchy.children("root.a") == ["root.a.b", "root.a.d"]
    assert list(hierarchy.ancestors("root.a.b.c")) == ["root.a.b", "root.a", "root"]
    assert list(hierarchy.ancestors("root")) == []
    assert hierarchy.path_from_root("root.a.b.c") == ["root", "root.a", "root.a.b", "root.a.b.c"]
    assert hierarchy.is_leaf("root.a.b.c")
    assert hierarchy.is_leaf("root.e")
    assert not hierarchy.is_leaf("root.a")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("root", {}),
        ("root.e", {}),
        ("root.a", {"memory": 10 * GI, "vcore": 8000}),
        ("root.a.d", {"memory": 10 * GI, "vcore": 8000}),
        ("root.a.b", {"memory": 10 * GI, "vcore": 8000, "pods": 10}),
        ("root.a.b.c", {"memory": 5 * GI, "vcore": 8000, "pods": 10}),
    ],
)
def test_effective_max_is_the_componentwise_min_along_the_path(path: str, expected: dict) -> None:
    assert tree().effective_max(path) == expected


def policy_tree(**policies: str) -> Hierarchy:
    """root.g.p.q with ``preemption.policy`` set per queue name (g, p, q)."""
    return Hierarchy(
        config(
            *(
                queue(
                    path,
                    properties={"preemption.policy": policies[name]} if name in policies else {},
                )
                for name, path in (("g", "root.g"), ("p", "root.g.p"), ("q", "root.g.p.q"))
            )
        )
    )


@pytest.mark.parametrize(
    ("policies", "expected"),
    [
        pytest.param({}, Effective("default", None), id="none-set"),
        pytest.param({"q": "fence"}, Effective("fence", "root.g.p.q"), id="own-fence"),
        pytest.param({"q": "FENCE"}, Effective("fence", "root.g.p.q"), id="own-case-folded"),
        pytest.param(
            {"q": "default", "p": "disabled"}, Effective("default", "root.g.p.q"), id="own-wins"
        ),
        pytest.param({"p": "disabled"}, Effective("disabled", "root.g.p"), id="parent-disabled"),
        pytest.param({"g": "Disabled"}, Effective("disabled", "root.g"), id="grandparent-disabled"),
        pytest.param({"p": "fence"}, Effective("default", None), id="fence-not-inherited"),
        pytest.param(
            {"g": "disabled", "p": "default"}, Effective("default", None), id="nearest-default-wins"
        ),
        pytest.param(
            {"g": "disabled", "p": "fence"}, Effective("default", None), id="nearest-fence-blocks"
        ),
        pytest.param(
            {"g": "fence", "p": "disabled"},
            Effective("disabled", "root.g.p"),
            id="nearest-disabled",
        ),
    ],
)
def test_effective_policy(policies: dict, expected: Effective) -> None:
    assert policy_tree(**policies).effective_policy("root.g.p.q") == expected


def quota_delay_tree(**delays: str) -> Hierarchy:
    """root.g.p.q with ``quota.preemption.delay`` set per queue name (g, p, q)."""
    return Hierarchy(
        config(
            *(
                queue(
                    path,
                    properties={"quota.preemption.delay": delays[name]} if name in delays else {},
                )
                for name, path in (("g", "root.g"), ("p", "root.g.p"), ("q", "root.g.p.q"))
            )
        )
    )


@pytest.mark.parametrize(
    ("delays", "expected"),
    [
        pytest.param({}, Effective(0, None), id="none-set"),
        pytest.param({"q": "2h"}, Effective(7200, "root.g.p.q"), id="own"),
        pytest.param({"q": "60", "p": "2h"}, Effective(60, "root.g.p.q"), id="own-wins"),
        pytest.param({"p": "1h"}, Effective(3600, "root.g.p"), id="from-parent"),
        pytest.param({"g": "30m"}, Effective(1800, "root.g"), id="from-grandparent"),
        pytest.param({"g": "30m", "p": "0"}, Effective(0, "root.g.p"), id="nearest-zero-wins"),
    ],
)
def test_effective_quota_delay(delays: dict, expected: Effective) -> None:
    assert quota_delay_tree(**delays).effective_quota_delay("root.g.p.q") == expected


def test_effective_quota_delay_of_an_ancestor_is_not_taken_from_a_descendant() -> None:
    assert quota_delay_tree(q="1h").effective_quota_delay("root.g") == Effective(0, None)


def delay_tree() -> Hierarchy:
    return Hierarchy(
        config(
            queue("root.parent", properties={"preemption.delay": "10m"}),
            queue("root.parent.leaf"),
            queue("root.parent.own", properties={"preemption.delay": "45s"}),
            queue("root.plain"),
            default_preemption_delay=90,
        )
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("root.parent.own", Effective(45, "root.parent.own"), id="leaf-own"),
        pytest.param("root.parent.leaf", Effective(90, "partition"), id="not-inherited"),
        pytest.param("root.plain", Effective(90, "partition"), id="partition-default"),
        pytest.param("root.parent", Effective(90, "partition"), id="parent-own-ignored"),
    ],
)
def test_preemption_delay(path: str, expected: Effective) -> None:
    assert delay_tree().preemption_delay(path) == expected


def test_preemption_delay_uses_the_builtin_partition_default() -> None:
    assert Hierarchy(config(queue("root.a"))).preemption_delay("root.a") == Effective(
        30, "partition"
    )
