"""What an export means to YuniKorn: durations with a unit, the preemption block only when it says
something, the oldest release that reads it, and documents YuniKorn accepts or refuses.

Each test cites the YuniKorn rule it mirrors (yunikorn-core ``pkg/common/configs``:
``config.go`` for the strict decoder, ``configvalidator.go`` for ``Validate`` and its checks,
``pkg/scheduler/objects/queue.go`` for how properties are read).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from preemption.config import PartitionConfig
from preemption.durations import parse_go_duration
from preemption.hierarchy import ConfigErrors
from preemption.yunikorn import (
    config_warnings,
    dump_scheduler_config,
    load_scheduler_config,
    parse_queue_tree,
    yunikorn_min_version,
)


def load(text: str) -> list[PartitionConfig]:
    return load_scheduler_config(yaml.safe_load(text))


def errors_of(text: str) -> dict[str, str]:
    with pytest.raises(ConfigErrors) as caught:
        load(text)
    return {error.location: error.message for error in caught.value.errors}


def one_queue(properties: str = "", partition: str = "") -> str:
    return f"""
partitions:
  - name: default
{partition}
    queues:
      - name: root
        queues:
          - name: a
            properties: {{{properties}}}
"""


def exported_properties(configs: list[PartitionConfig]) -> dict[str, Any]:
    return dump_scheduler_config(configs)["partitions"][0]["queues"][0]["queues"][0]["properties"]


def export_round_trip_is_byte_stable(text: str) -> str:
    """Import, export, import (unchanged), export again (identical): the text of the export."""
    first = load(text)
    exported = yaml.safe_dump(dump_scheduler_config(first), sort_keys=False)
    second = load(exported)
    assert second == first
    assert yaml.safe_dump(dump_scheduler_config(second), sort_keys=False) == exported
    return exported


# --------------------------------------------------------------------------------------------
# durations (queue.go: convertDelay uses Go's time.ParseDuration)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "exported", "seconds"),
    [
        ("60", "60s", 60),  # seed 001's spelling: Go refuses it, so it gets its unit
        ("'60'", "60s", 60),
        ("50ms", "50ms", 0.05),
        ("1.5m", "1.5m", 90),
        ("1h0m30s", "1h0m30s", 3630),
        ("30m1h", "30m1h", 5400),
        ("1m30s", "1m30s", 90),
        ("2h", "2h", 7200),
    ],
)
def test_go_durations_are_accepted_and_exported_with_a_unit__time_ParseDuration(
    written: str, exported: str, seconds: float
) -> None:
    text = one_queue(f"quota.preemption.delay: {written}, preemption.delay: {written}")
    configs = load(text)
    properties = exported_properties(configs)
    assert properties == {"preemption.delay": exported, "quota.preemption.delay": exported}
    # What YuniKorn's Go parser makes of the export is exactly the value read here.
    assert parse_go_duration(exported, field="f") == round(seconds * 10**9)
    export_round_trip_is_byte_stable(text)


@pytest.mark.parametrize(
    ("written", "fragment"),
    [
        ("1h 30m", "unknown unit"),
        ("5d", "unknown unit 'd'"),
        ("1.5", "has no unit"),
        ("soon", "is not a duration"),
        ("-5s", "must not be negative"),
    ],
)
def test_durations_go_refuses_are_refused__time_ParseDuration(written: str, fragment: str) -> None:
    errors = errors_of(one_queue(f"quota.preemption.delay: '{written}'"))
    assert list(errors) == ["root.a: properties.quota.preemption.delay"]
    assert fragment in errors["root.a: properties.quota.preemption.delay"]


def test_a_zero_preemption_delay_is_refused_but_a_zero_quota_delay_turns_it_off__convertDelay():
    errors = errors_of(one_queue("preemption.delay: 0s"))
    assert "more than 0s" in errors["root.a: properties.preemption.delay"]
    (config,) = load(one_queue("quota.preemption.delay: 0"))
    assert config.queue("root.a").properties == {"quota.preemption.delay": "0s"}  # type: ignore[union-attr]


def test_the_ask_backoff_delay_is_a_go_duration_too__convertDelay() -> None:
    (config,) = load(one_queue("application.unschedasks.backoff.delay: 45"))
    assert exported_properties([config]) == {"application.unschedasks.backoff.delay": "45s"}
    errors = errors_of(one_queue("application.unschedasks.backoff.delay: 0s"))
    assert "more than 0s" in errors["root.a: properties.application.unschedasks.backoff.delay"]


# --------------------------------------------------------------------------------------------
# the partition's preemption block and the oldest YuniKorn release
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "exported"),
    [
        ("", None),
        ("    preemption: {enabled: true}", None),
        ("    preemption: {enabled: true, quotapreemptionenabled: false}", None),
        ("    preemption: {enabled: false}", {"enabled": False}),
        ("    preemption: {quotapreemptionenabled: true}", {"quotapreemptionenabled": True}),
        (
            "    preemption: {enabled: false, quotapreemptionenabled: true}",
            {"enabled": False, "quotapreemptionenabled": True},
        ),
    ],
)
def test_the_preemption_block_is_exported_only_when_not_default__PartitionPreemptionConfig(
    block: str, exported: dict[str, bool] | None
) -> None:
    configs = load(one_queue(partition=block))
    partition = dump_scheduler_config(configs)["partitions"][0]
    assert partition.get("preemption") == exported
    export_round_trip_is_byte_stable(one_queue(partition=block))


def test_an_export_without_quota_preemption_loads_on_any_release() -> None:
    configs = load(one_queue("preemption.policy: fence, preemption.delay: 30s"))
    assert yunikorn_min_version(configs) == (None, [])
    assert "quotapreemptionenabled" not in yaml.safe_dump(dump_scheduler_config(configs))


def test_quota_preemption_needs_yunikorn_1_8() -> None:
    configs = load(one_queue(partition="    preemption: {quotapreemptionenabled: true}"))
    version, reasons = yunikorn_min_version(configs)
    assert version == "1.8.0"
    assert reasons == ["partition default: preemption.quotapreemptionenabled is true"]
    configs = load(one_queue("quota.preemption.delay: 10m"))
    version, reasons = yunikorn_min_version(configs)
    assert version == "1.8.0"
    assert reasons == ["partition default: quota.preemption.delay is set on root.a"]
    # A zero delay is quota preemption off: nothing new is needed.
    assert yunikorn_min_version(load(one_queue("quota.preemption.delay: 0s"))) == (None, [])


# --------------------------------------------------------------------------------------------
# names, structure and the guarantee rule (configvalidator.go)
# --------------------------------------------------------------------------------------------


def test_siblings_differing_only_in_case_are_refused_naming_both__checkQueues() -> None:
    errors = errors_of(
        """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: Test
          - name: test
"""
    )
    assert list(errors) == ["root: queues[1].name"]
    assert "'test' and 'Test'" in errors["root: queues[1].name"]


def test_a_root_queue_spelled_in_capitals_is_the_root__checkQueuesStructure() -> None:
    (config,) = load("partitions: [{name: default, queues: [{name: ROOT, queues: [{name: a}]}]}]")
    assert [queue.path for queue in config.queues] == ["root", "root.a"]


def test_guarantees_pass_up_through_a_parent_without_one__checkQueueResource() -> None:
    text = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: org
            resources: {guaranteed: {memory: 10Gi}}
            queues:
              - name: team
                queues:
                  - name: x
                    resources: {guaranteed: {memory: 6Gi}}
                  - name: y
                    resources: {guaranteed: {memory: 6Gi}}
"""
    errors = errors_of(text)
    assert list(errors) == ["root.org: resources.guaranteed.memory"]
    assert "12Gi" in errors["root.org: resources.guaranteed.memory"]
    assert "root.org.team" in errors["root.org: resources.guaranteed.memory"]
    load(text.replace("guaranteed: {memory: 10Gi}", "guaranteed: {memory: 12Gi}"))


def test_quantities_follow_yunikorns_grammar__ParseQuantity() -> None:
    accepted = one_queue().replace(
        "properties: {}", "resources: {max: {memory: 10 Gi, vcore: 500 m}}"
    )
    (config,) = load(accepted)
    assert config.queue("root.a").max == {"memory": 10 * 2**30, "vcore": 500}  # type: ignore[union-attr]
    refused = one_queue().replace("properties: {}", "resources: {max: {memory: 1.5Gi}}")
    assert "whole numbers" in errors_of(refused)["root.a: resources.max.memory"]


# --------------------------------------------------------------------------------------------
# what the product says about inputs that are not a queues.yaml
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dump",
    [
        # GET /ws/v1/config as YAML: the config inlined beside extra and the deadlock settings.
        "partitions: [{name: default, queues: [{name: root}]}]\nchecksum: ABC\n"
        "extra: {log.level: info}\ndeadlockdetectionenabled: false\ndeadlocktimeoutseconds: 60\n",
        # The same as JSON, with Go's field names.
        '{"Partitions": [{"Name": "default", "Queues": [{"Name": "root"}]}], "Checksum": "ABC",'
        ' "DeadlockDetectionEnabled": false, "DeadlockTimeoutSeconds": 60}',
    ],
)
def test_a_yunikorn_rest_dump_is_recognised__ConfigDAOInfo(dump: str) -> None:
    errors = errors_of(dump)
    assert "YuniKorn REST response" in errors["document"]
    assert "yunikorn-configs ConfigMap" in errors["document"]


def test_camel_case_keys_get_a_hint() -> None:
    errors = errors_of(
        """
partitions:
  - name: default
    placementRules: [{name: tag, value: namespace}]
    queues: [{name: root}]
"""
    )
    assert "'placementrules'" in errors["partition default: placementRules"]


def test_an_empty_file_says_so() -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_scheduler_config(None)
    assert "the file is empty" in str(caught.value)


def test_an_empty_quantity_says_empty_value() -> None:
    errors = errors_of(one_queue().replace("properties: {}", "resources: {max: {memory: }}"))
    assert errors["root.a: resources.max.memory"].startswith("empty value")


# --------------------------------------------------------------------------------------------
# warnings (SPEC 3.2: preemption.delay on a parent)
# --------------------------------------------------------------------------------------------


def test_preemption_delay_on_a_parent_is_accepted_with_a_warning() -> None:
    (config,) = load(
        """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: org
            properties: {preemption.delay: 2m}
            queues: [{name: team}]
"""
    )
    warnings = config_warnings(config)
    assert [(w.queue, w.field) for w in warnings] == [("root.org", "properties.preemption.delay")]
    assert "YuniKorn passes this value to the leaves below" in warnings[0].message


def test_scenario_queue_trees_keep_the_kubernetes_quantity_grammar() -> None:
    # Scenario files are the product's own format: 1.5Gi means what it means in cluster state.
    queues, errors = parse_queue_tree(
        [{"name": "root", "queues": [{"name": "a", "resources": {"max": {"memory": "1.5Gi"}}}]}],
        at="queues",
    )
    assert errors == []
    assert queues[1].max == {"memory": 1536 * 2**20}
