"""Tests for preemption.yunikorn: reading and writing YuniKorn ``queues.yaml`` documents."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import ConfigErrors
from preemption.yunikorn import dump_scheduler_config, load_scheduler_config
from tests.unit.builders import GI, MI

REALISTIC = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
      - name: tag
        value: namespace
        create: true
        filter:
          type: allow
          groups: [ml, web]
    limits:
      - limit: cap the interns
        users: [intern]
        maxresources: {memory: 10Gi, vcore: 4}
        maxapplications: 5
    nodesortpolicy:
      type: binpacking
      resourceweights: {vcore: 4.0, memory: 1.0}
    usergroupresolver:
      type: ldap
    preemption:
      enabled: true
      quotapreemptionenabled: true
    queues:
      - name: root
        submitacl: "*"
        properties:
          application.sort.policy: fifo
        queues:
          - name: prod
            parent: true
            adminacl: "ops ops-admins"
            maxapplications: 200
            resources:
              guaranteed: {memory: 256Gi, vcore: 64, nvidia.com/gpu: 8}
              max: {memory: 512Gi, vcore: 128, nvidia.com/gpu: 16, pods: 2000}
            properties:
              preemption.policy: fence
              quota.preemption.delay: 1h
            queues:
              - name: web
                maxapplications: 100
                resources:
                  guaranteed: {memory: 64Gi, vcore: 16}
                  max: {memory: 128Gi, vcore: 32, pods: 500}
                properties:
                  preemption.delay: 45s
              - name: ml
                maxapplications: 100
                resources:
                  guaranteed: {memory: 128Gi, vcore: "32500m", nvidia.com/gpu: 8}
                  max: {memory: 256Gi, vcore: 64, nvidia.com/gpu: 12}
                queues:
                  - name: training
                    maxapplications: 50
                    resources:
                      guaranteed: {nvidia.com/gpu: 6}
                      max: {nvidia.com/gpu: 10, memory: 200G}
                      quota.preemption.delay: 7200
                  - name: inference
                    maxapplications: 50
                    resources:
                      guaranteed: {nvidia.com/gpu: 2}
                    properties:
                      preemption.policy: DISABLED
          - name: dev
            childtemplate:
              maxapplications: 10
              properties: {application.sort.policy: fair}
              resources:
                max: {memory: 8Gi}
            limits:
              - limit: per user
                users: ["*"]
                maxapplications: 3
            resources:
              max: {memory: 64Gi, vcore: 16}
            properties:
              preemption.policy: disabled
              quota.preemption.delay: "0"
  - name: gpu-pool
    queues:
      - name: research
        resources:
          max: {nvidia.com/gpu: 4}
      - name: students
"""


def load(text: str, **kwargs: Any) -> list[PartitionConfig]:
    return load_scheduler_config(yaml.safe_load(text), **kwargs)


def errors_of(data: object, **kwargs: Any) -> dict[str, str]:
    """Location -> message of every error ``load_scheduler_config`` raises for ``data``."""
    if isinstance(data, str):
        data = yaml.safe_load(data)
    with pytest.raises(ConfigErrors) as caught:
        load_scheduler_config(data, **kwargs)
    found = [(error.location, error.message) for error in caught.value.errors]
    assert len({location for location, _ in found}) == len(found), found
    return dict(found)


def doc(*queues: dict[str, Any], **partition: Any) -> dict[str, Any]:
    """A one-partition document whose root holds ``queues``."""
    return {
        "partitions": [
            {"name": "default", **partition, "queues": [{"name": "root", "queues": list(queues)}]}
        ]
    }


# --------------------------------------------------------------------------------------------
# a realistic document
# --------------------------------------------------------------------------------------------


def test_realistic_document_loads_into_partition_configs() -> None:
    default, gpu = load(REALISTIC)

    assert default.name == "default"
    assert default.settings.preemption_enabled is True
    assert default.settings.quota_preemption_enabled is True
    assert [q.path for q in default.queues] == [
        "root",
        "root.prod",
        "root.prod.web",
        "root.prod.ml",
        "root.prod.ml.training",
        "root.prod.ml.inference",
        "root.dev",
    ]
    prod = default.queue("root.prod")
    assert prod is not None
    assert prod.guaranteed == {"memory": 256 * GI, "nvidia.com/gpu": 8, "vcore": 64000}
    assert prod.max == {"memory": 512 * GI, "nvidia.com/gpu": 16, "pods": 2000, "vcore": 128000}
    assert prod.properties == {"preemption.policy": "fence", "quota.preemption.delay": "1h"}
    assert prod.extra == {"parent": True, "adminacl": "ops ops-admins", "maxapplications": 200}
    assert default.queue("root.prod.ml").guaranteed["vcore"] == 32500  # type: ignore[union-attr]
    training = default.queue("root.prod.ml.training")
    assert training is not None
    assert training.max == {"memory": 200 * 1000**3, "nvidia.com/gpu": 10}
    assert training.properties == {"quota.preemption.delay": "7200s"}  # seconds get their unit
    assert default.queue("root.dev").extra["childtemplate"]["maxapplications"] == 10  # type: ignore[union-attr]
    assert default.queue("root").extra == {"submitacl": "*"}  # type: ignore[union-attr]
    assert set(default.settings.extra) == {
        "placementrules",
        "limits",
        "nodesortpolicy",
        "usergroupresolver",
    }
    assert default.settings.extra["nodesortpolicy"]["resourceweights"] == {
        "vcore": 4.0,
        "memory": 1.0,
    }

    assert gpu.name == "gpu-pool"
    assert [q.path for q in gpu.queues] == ["root", "root.research", "root.students"]


def test_realistic_document_round_trips_through_dump() -> None:
    first = load(REALISTIC)
    dumped = dump_scheduler_config(first)
    second = load_scheduler_config(dumped)
    assert second == first
    assert [config.to_json() for config in second] == [config.to_json() for config in first]


def test_round_trip_survives_yaml_text() -> None:
    first = load(REALISTIC)
    text = yaml.safe_dump(dump_scheduler_config(first), sort_keys=False)
    assert load(text) == first
    assert dump_scheduler_config(load(text)) == dump_scheduler_config(first)


def test_dump_keeps_yunikorn_keys_verbatim() -> None:
    raw = yaml.safe_load(REALISTIC)
    dumped = dump_scheduler_config(load(REALISTIC))
    partition, raw_partition = dumped["partitions"][0], raw["partitions"][0]
    for key in ("placementrules", "limits", "nodesortpolicy", "usergroupresolver"):
        assert partition[key] == raw_partition[key]
    assert partition["preemption"] == {"quotapreemptionenabled": True}  # only non-defaults
    prod = partition["queues"][0]["queues"][0]
    raw_prod = raw_partition["queues"][0]["queues"][0]
    for key in ("parent", "adminacl", "maxapplications"):
        assert prod[key] == raw_prod[key]
    dev, raw_dev = partition["queues"][0]["queues"][1], raw_partition["queues"][0]["queues"][1]
    assert dev["childtemplate"] == raw_dev["childtemplate"]
    assert dev["limits"] == raw_dev["limits"]
    assert partition["queues"][0]["submitacl"] == "*"


def test_dump_writes_quantities_readably() -> None:
    dumped = dump_scheduler_config(load(REALISTIC))
    prod = dumped["partitions"][0]["queues"][0]["queues"][0]
    assert prod["resources"] == {
        "guaranteed": {"memory": "256Gi", "nvidia.com/gpu": "8", "vcore": "64"},
        "max": {"memory": "512Gi", "nvidia.com/gpu": "16", "pods": "2k", "vcore": "128"},
    }
    ml = prod["queues"][1]
    assert ml["resources"]["guaranteed"]["vcore"] == "32500m"


def test_dump_leaves_product_settings_out_of_queues_yaml() -> None:
    configs = load(REALISTIC, settings_for=lambda name: PartitionSettings(name, miss_percent=7))
    assert configs[0].settings.miss_percent == 7
    text = yaml.safe_dump(dump_scheduler_config(configs))
    for setting in ("miss_percent", "default_preemption_delay", "ask_policy", "daemonset"):
        assert setting not in text


def test_settings_for_supplies_the_product_settings_per_partition() -> None:
    def settings_for(name: str) -> PartitionSettings:
        return PartitionSettings(name="ignored", miss_percent=len(name), ask_policy="priority")

    default, gpu = load(REALISTIC, settings_for=settings_for)
    assert (default.name, default.settings.miss_percent) == ("default", 7)
    assert (gpu.name, gpu.settings.miss_percent) == ("gpu-pool", 8)
    assert gpu.settings.ask_policy == "priority"


def test_invalid_product_settings_are_reported_at_the_partition() -> None:
    errors = errors_of(
        REALISTIC, settings_for=lambda name: PartitionSettings(name=name, miss_percent=200)
    )
    assert set(errors) == {"partition default: miss_percent", "partition gpu-pool: miss_percent"}


def test_partition_without_preemption_block_has_the_defaults() -> None:
    (config,) = load_scheduler_config(doc())
    assert config.settings.preemption_enabled is True
    assert config.settings.quota_preemption_enabled is False
    assert config.queues == (QueueConfig(path="root", parent=None, name="root"),)


def test_partition_without_queues_is_refused__checkQueuesStructure() -> None:
    # YuniKorn: "queue config is not set"; an empty list is a root alone, as in YuniKorn.
    errors = errors_of({"partitions": [{"name": "default"}]})
    assert list(errors) == ["partition default: queues"]
    assert "must have queues" in errors["partition default: queues"]
    (config,) = load_scheduler_config({"partitions": [{"name": "default", "queues": []}]})
    assert [q.path for q in config.queues] == ["root"]


def test_checksum_at_the_top_level_is_accepted_and_ignored() -> None:
    data = doc({"name": "a"})
    plain = load_scheduler_config(data)
    assert load_scheduler_config({**data, "checksum": "ab12cd"}) == plain
    assert "checksum" not in dump_scheduler_config(plain)


# --------------------------------------------------------------------------------------------
# quota.preemption.delay spellings
# --------------------------------------------------------------------------------------------


def test_seed_spelling_under_resources_becomes_the_property() -> None:
    (config,) = load(
        """
        partitions:
          - name: default
            queues:
              - name: root
                queues:
                  - name: a
                    resources:
                      guaranteed: {memory: 1Gi}
                      max: {memory: 2Gi}
                      quota.preemption.delay: 7200
        """
    )
    a = config.queue("root.a")
    assert a is not None
    # Seconds get their unit: YuniKorn's Go parser reads a bare "7200" as an error (and then 0).
    assert a.properties == {"quota.preemption.delay": "7200s"}
    written = dump_scheduler_config([config])["partitions"][0]["queues"][0]["queues"][0]
    assert written["properties"] == {"quota.preemption.delay": "7200s"}
    assert "quota.preemption.delay" not in written["resources"]
    assert load_scheduler_config(dump_scheduler_config([config])) == [config]


def test_seed_spelling_as_a_duration_string_is_kept_as_written() -> None:
    (config,) = load_scheduler_config(
        doc({"name": "a", "resources": {"quota.preemption.delay": "2h"}})
    )
    assert config.queue("root.a").properties == {"quota.preemption.delay": "2h"}  # type: ignore[union-attr]


def test_both_spellings_agreeing_are_accepted() -> None:
    (config,) = load_scheduler_config(
        doc(
            {
                "name": "a",
                "resources": {"quota.preemption.delay": 7200},
                "properties": {"quota.preemption.delay": "2h"},
            }
        )
    )
    assert config.queue("root.a").properties == {"quota.preemption.delay": "2h"}  # type: ignore[union-attr]


def test_both_spellings_disagreeing_are_refused() -> None:
    errors = errors_of(
        doc(
            {
                "name": "a",
                "resources": {"quota.preemption.delay": 7200},
                "properties": {"quota.preemption.delay": "1h"},
            }
        )
    )
    assert list(errors) == ["root.a: resources.quota.preemption.delay"]
    assert "disagrees" in errors["root.a: resources.quota.preemption.delay"]


def test_unparsable_seed_delay_is_refused_at_its_resources_path() -> None:
    errors = errors_of(doc({"name": "a", "resources": {"quota.preemption.delay": "soon"}}))
    assert list(errors) == ["root.a: resources.quota.preemption.delay"]
    assert "is not a duration" in errors["root.a: resources.quota.preemption.delay"]


def test_seed_delay_enforces_meaningful_quota_decrease() -> None:
    errors = errors_of(
        doc(
            {
                "name": "a",
                "resources": {
                    "guaranteed": {"memory": "1Gi"},
                    "max": {"memory": "1Gi"},
                    "quota.preemption.delay": 60,
                },
            }
        )
    )
    assert list(errors) == ["root.a: resources.max.memory"]
    assert "greater than guaranteed" in errors["root.a: resources.max.memory"]


def test_an_import_with_max_below_guaranteed_gets_one_message_naming_both_values() -> None:
    errors = errors_of(
        doc(
            {
                "name": "a",
                "resources": {"guaranteed": {"memory": "20Gi"}, "max": {"memory": "10Gi"}},
                "properties": {"quota.preemption.delay": "60s"},
            }
        )
    )
    assert errors == {"root.a: resources.max.memory": "max memory 10Gi is below guaranteed 20Gi"}


# --------------------------------------------------------------------------------------------
# implicit root
# --------------------------------------------------------------------------------------------


def test_top_level_queues_other_than_root_go_under_an_implicit_root() -> None:
    (config,) = load(
        """
        partitions:
          - name: default
            queues:
              - name: a
                resources: {max: {memory: 4Gi}}
              - name: b
                queues: [{name: c}]
        """
    )
    assert [(q.path, q.parent) for q in config.queues] == [
        ("root", None),
        ("root.a", "root"),
        ("root.b", "root"),
        ("root.b.c", "root.b"),
    ]
    assert config.queue("root.a").max == {"memory": 4 * GI}  # type: ignore[union-attr]
    dumped = dump_scheduler_config([config])["partitions"][0]["queues"]
    assert [q["name"] for q in dumped] == ["root"]
    assert load_scheduler_config(dump_scheduler_config([config])) == [config]


def test_a_single_top_level_queue_not_named_root_is_put_under_root() -> None:
    (config,) = load_scheduler_config({"partitions": [{"name": "p", "queues": [{"name": "a"}]}]})
    assert [q.path for q in config.queues] == ["root", "root.a"]


def test_root_beside_other_top_level_queues_is_refused() -> None:
    errors = errors_of({"partitions": [{"name": "p", "queues": [{"name": "a"}, {"name": "root"}]}]})
    assert list(errors) == ["partition p: queues[1].name"]
    assert "only top-level queue" in errors["partition p: queues[1].name"]


def test_errors_under_an_implicit_root_carry_their_yaml_path() -> None:
    errors = errors_of(
        {
            "partitions": [
                {
                    "name": "p",
                    "queues": [
                        {"name": "a", "resources": {"max": {"memory": "1Gi"}}},
                        {
                            "name": "b",
                            "resources": {
                                "guaranteed": {"memory": "2Gi"},
                                "max": {"memory": "1Gi"},
                            },
                        },
                    ],
                }
            ]
        }
    )
    assert errors == {"root.b: resources.max.memory": "max memory 1Gi is below guaranteed 2Gi"}


# --------------------------------------------------------------------------------------------
# structural errors with their YAML paths
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "location"),
    [
        pytest.param({**doc(), "queues": []}, "queues", id="top"),
        pytest.param(doc(sortpolicy="fifo"), "partition default: sortpolicy", id="partition"),
        pytest.param(doc({"name": "a", "maxresources": {}}), "root.a: maxresources", id="queue"),
        pytest.param(
            doc({"name": "a", "queues": [{"name": "b"}, {"name": "c", "weight": 2}]}),
            "root.a.c: weight",
            id="nested-queue",
        ),
        pytest.param(
            doc({"name": "a", "resources": {"min": {"memory": 1}}}),
            "root.a: resources.min",
            id="resources",
        ),
        pytest.param(
            doc(preemption={"enabled": True, "delay": "30s"}),
            "partition default: preemption.delay",
            id="preemption",
        ),
    ],
)
def test_unknown_keys_are_refused_at_every_level(data: dict, location: str) -> None:
    errors = errors_of(data)
    assert list(errors) == [location]
    assert errors[location] == "unknown key"


@pytest.mark.parametrize(
    ("data", "location", "fragment"),
    [
        pytest.param([], "document", "must be a mapping", id="document-not-mapping"),
        pytest.param({"partitions": {}}, "partitions", "non-empty list", id="partitions-not-list"),
        pytest.param({"partitions": []}, "partitions", "non-empty list", id="no-partitions"),
        pytest.param(
            {"partitions": ["default"]},
            "partitions[0]",
            "must be a mapping",
            id="partition-not-mapping",
        ),
        pytest.param(
            {"partitions": [{"name": "p", "queues": {"name": "root"}}]},
            "partition p: queues",
            "must be a list",
            id="queues-not-list",
        ),
        pytest.param(
            doc({"name": "a", "queues": {"name": "b"}}),
            "root.a: queues",
            "must be a list",
            id="child-queues-not-list",
        ),
        pytest.param(
            doc({"name": "a", "resources": ["max"]}),
            "root.a: resources",
            "must be a mapping",
            id="resources-not-mapping",
        ),
        pytest.param(
            doc({"name": "a", "resources": {"max": "10Gi"}}),
            "root.a: resources.max",
            "must be a mapping",
            id="max-not-mapping",
        ),
        pytest.param(
            doc({"name": "a", "properties": ["preemption.policy"]}),
            "root.a: properties",
            "must be a mapping",
            id="properties-not-mapping",
        ),
        pytest.param(
            doc({"name": "a", "properties": {"preemption.policy": ["fence"]}}),
            "root.a: properties.preemption.policy",
            "single value",
            id="property-value-a-list",
        ),
        pytest.param(
            doc({"name": 7}),
            "root: queues[0].name",
            "is not a valid queue name",
            id="queue-name-int",
        ),
        pytest.param(
            doc({"resources": {}}),
            "root: queues[0].name",
            "is not a valid queue name",
            id="queue-name-missing",
        ),
        pytest.param(doc("a"), "root: queues[0].name", "must be a mapping", id="queue-not-mapping"),
        pytest.param(
            {"partitions": [{"name": ["default"]}]},
            "partitions[0]: name",
            "is not a valid partition name",
            id="partition-name-list",
        ),
        pytest.param(
            {"partitions": [{"name": "bad name"}]},
            "partition bad name: name",
            "is not a valid partition name",
            id="partition-name-invalid",
        ),
        pytest.param(
            doc(preemption={"enabled": "yes"}),
            "partition default: preemption.enabled",
            "true or false",
            id="enabled-not-bool",
        ),
        pytest.param(
            doc(preemption={"quotapreemptionenabled": 1}),
            "partition default: preemption.quotapreemptionenabled",
            "true or false",
            id="quotapreemptionenabled-not-bool",
        ),
        pytest.param(
            doc(preemption=True),
            "partition default: preemption",
            "must be a mapping",
            id="preemption-not-mapping",
        ),
    ],
)
def test_wrong_types_are_refused_with_their_path(
    data: object, location: str, fragment: str
) -> None:
    errors = errors_of(data)
    assert location in errors, errors
    assert fragment in errors[location]


def test_invalid_queue_names_are_refused_with_their_path() -> None:
    errors = errors_of(doc({"name": "a" * 65}, {"name": "ok"}, {"name": "not ok!"}))
    assert list(errors) == ["root: queues[0].name", "root: queues[2].name"]


def test_a_queue_name_with_a_trailing_newline_is_refused() -> None:
    errors = errors_of(yaml.safe_load('{partitions: [{name: p, queues: [{name: "a\\n"}]}]}'))
    assert list(errors) == ["partition p: queues[0].name"]


# --------------------------------------------------------------------------------------------
# quantities
# --------------------------------------------------------------------------------------------

DEEP = "root.a.y: resources"


def deep(resources: dict[str, Any]) -> dict[str, Any]:
    """A document whose ``root.a.y`` queue (``DEEP``) carries ``resources``."""
    return doc({"name": "a", "queues": [{"name": "x"}, {"name": "y", "resources": resources}]})


@pytest.mark.parametrize(
    ("resources", "location", "fragment"),
    [
        pytest.param(
            {"max": {"memory": "-1Gi"}},
            f"{DEEP}.max.memory",
            "must not be negative",
            id="negative-string",
        ),
        pytest.param(
            {"max": {"memory": -5}}, f"{DEEP}.max.memory", "must not be negative", id="negative-int"
        ),
        pytest.param(
            {"max": {"memory": "1.5"}}, f"{DEEP}.max.memory", "whole numbers", id="fractional-bytes"
        ),
        pytest.param(
            {"max": {"pods": "2.5"}}, f"{DEEP}.max.pods", "whole numbers", id="fractional-pods"
        ),
        pytest.param(
            {"max": {"memory": 1.5}}, f"{DEEP}.max.memory", "floating-point", id="yaml-float"
        ),
        pytest.param(
            {"max": {"memory": "10GB"}}, f"{DEEP}.max.memory", "unknown suffix", id="unknown-suffix"
        ),
        pytest.param(
            {"guaranteed": {"vcore": "0.0001"}},
            f"{DEEP}.guaranteed.vcore",
            "whole numbers",
            id="sub-millicore",
        ),
        pytest.param(
            {"max": {"memory": "1.5Gi"}},
            f"{DEEP}.max.memory",
            "write '1536Mi'",
            id="decimal-with-suffix__yunikorn-quantity-grammar",
        ),
        pytest.param(
            {"max": {"memory": "1000m"}},
            f"{DEEP}.max.memory",
            "only allowed for vcore",
            id="milli-on-memory__yunikorn-quantity-grammar",
        ),
        pytest.param(
            {"max": {"memory": None}},
            f"{DEEP}.max.memory",
            "empty value",
            id="empty-value",
        ),
        pytest.param(
            {"guaranteed": {"nvidia.com/gpu": "many"}},
            f"{DEEP}.guaranteed.nvidia.com/gpu",
            "not a number",
            id="non-numeric",
        ),
        pytest.param({"max": {"memory": True}}, f"{DEEP}.max.memory", "not a quantity", id="bool"),
    ],
)
def test_bad_quantities_are_refused_with_their_path(
    resources: dict, location: str, fragment: str
) -> None:
    errors = errors_of(deep(resources))
    assert list(errors) == [location]
    assert fragment in errors[location]


def test_every_bad_quantity_of_a_queue_is_reported() -> None:
    errors = errors_of(
        deep({"guaranteed": {"memory": "x", "vcore": "1"}, "max": {"memory": "-1", "pods": "1.5"}})
    )
    assert sorted(errors) == [
        f"{DEEP}.guaranteed.memory",
        f"{DEEP}.max.memory",
        f"{DEEP}.max.pods",
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"memory": "10Gi"}, {"memory": 10 * GI}),
        ({"memory": "512Mi"}, {"memory": 512 * MI}),
        ({"memory": "10 Gi"}, {"memory": 10 * GI}),  # YuniKorn allows blanks before the suffix
        ({"memory": "1500M"}, {"memory": 1_500_000_000}),
        ({"memory": 1024}, {"memory": 1024}),
        ({"vcore": 2}, {"vcore": 2000}),
        ({"vcore": "250m"}, {"vcore": 250}),
        ({"vcore": "250 m"}, {"vcore": 250}),
        ({"nvidia.com/gpu": 4, "pods": "1k"}, {"nvidia.com/gpu": 4, "pods": 1000}),
    ],
)
def test_quantities_are_parsed_into_canonical_units(raw: dict, expected: dict) -> None:
    (config,) = load_scheduler_config(doc({"name": "a", "resources": {"max": raw}}))
    assert config.queue("root.a").max == expected  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# validation rules, located in the YAML
# --------------------------------------------------------------------------------------------


def test_duplicate_sibling_names_are_refused() -> None:
    errors = errors_of(doc({"name": "a", "queues": [{"name": "x"}, {"name": "x"}]}))
    assert list(errors) == ["root.a: queues[1].name"]
    assert "duplicate queue name 'x' under root.a" in errors["root.a: queues[1].name"]


def test_duplicate_top_level_names_under_an_implicit_root_are_refused() -> None:
    errors = errors_of({"partitions": [{"name": "p", "queues": [{"name": "a"}, {"name": "a"}]}]})
    assert list(errors) == ["partition p: queues[1].name"]


def test_same_name_under_different_parents_is_accepted() -> None:
    (config,) = load_scheduler_config(
        doc({"name": "a", "queues": [{"name": "x"}]}, {"name": "b", "queues": [{"name": "x"}]})
    )
    assert [q.path for q in config.queues] == ["root", "root.a", "root.a.x", "root.b", "root.b.x"]


def test_duplicate_partitions_are_refused() -> None:
    other = {"name": "other", "queues": []}
    data = {"partitions": [doc()["partitions"][0], other, doc()["partitions"][0]]}
    errors = errors_of(data)
    assert list(errors) == ["partition default: name"]
    assert "duplicate partition 'default'" in errors["partition default: name"]


def test_partition_names_are_compared_case_insensitively__Validate() -> None:
    # YuniKorn: any spelling of "default" (or no name) is the default partition, and partition
    # names are unique regardless of case.
    data = {"partitions": [{"name": "GPU", "queues": []}, {"name": "gpu", "queues": []}]}
    errors = errors_of(data)
    assert list(errors) == ["partition gpu: name"]
    assert "'gpu'" in errors["partition gpu: name"] and "'GPU'" in errors["partition gpu: name"]
    (config,) = load_scheduler_config({"partitions": [{"name": "Default", "queues": []}]})
    assert config.name == "default"
    (config,) = load_scheduler_config({"partitions": [{"queues": []}]})
    assert config.name == "default"


def test_a_duplicate_partition_does_not_displace_the_first_partitions_error_paths() -> None:
    data = doc({"name": "a", "properties": {"preemption.policy": "fencing"}})
    data["partitions"].append({"name": "default", "queues": []})
    errors = errors_of(data)
    assert sorted(errors) == [
        "partition default: name",
        "partition default: root.a: properties.preemption.policy",
    ]


def test_child_max_above_parent_is_refused() -> None:
    errors = errors_of(
        doc(
            {
                "name": "a",
                "resources": {"max": {"memory": "8Gi"}},
                "queues": [
                    {
                        "name": "b",
                        "queues": [{"name": "c", "resources": {"max": {"memory": "9Gi"}}}],
                    }
                ],
            }
        )
    )
    location = "root.a.b.c: resources.max.memory"
    assert list(errors) == [location]
    assert "above the parent's effective max 8Gi" in errors[location]


def test_guarantees_summing_above_the_parent_are_refused() -> None:
    errors = errors_of(
        doc(
            {
                "name": "a",
                "resources": {"guaranteed": {"vcore": 4}, "max": {"memory": "10Gi"}},
                "queues": [
                    {"name": "x", "resources": {"guaranteed": {"vcore": 3, "memory": "6Gi"}}},
                    {"name": "y", "resources": {"guaranteed": {"vcore": "1500m", "memory": "6Gi"}}},
                ],
            }
        )
    )
    assert sorted(errors) == [
        "root.a: resources.guaranteed.vcore",
        "root.a: resources.max.memory",
    ]
    assert "4500m" in errors["root.a: resources.guaranteed.vcore"]


def test_invalid_policy_value_is_refused() -> None:
    errors = errors_of(doc({"name": "a", "properties": {"preemption.policy": "fencing"}}))
    location = "root.a: properties.preemption.policy"
    assert list(errors) == [location]
    assert "'fencing' is not one of" in errors[location]


def test_unparsable_delay_is_refused() -> None:
    errors = errors_of(doc({"name": "a", "properties": {"preemption.delay": "half a minute"}}))
    location = "root.a: properties.preemption.delay"
    assert list(errors) == [location]
    assert "is not a duration" in errors[location]


def test_integer_property_values_are_read_as_strings() -> None:
    (config,) = load_scheduler_config(
        doc({"name": "a", "properties": {"preemption.delay": 90, "priority.fence": True}})
    )
    assert config.queue("root.a").properties == {  # type: ignore[union-attr]
        "preemption.delay": "90s",  # a duration gets its unit
        "priority.fence": "true",
    }


def test_root_with_resources_is_refused() -> None:
    data = doc()
    data["partitions"][0]["queues"][0]["resources"] = {"max": {"memory": "1Ti"}}
    errors = errors_of(data)
    assert list(errors) == ["root: resources"]
    assert "carries no resources" in errors["root: resources"]


def test_several_errors_are_all_reported() -> None:
    data = {
        "checksum": "abc",
        "version": 2,
        "partitions": [
            {
                "name": "default",
                "preemption": {"enabled": "on"},
                "queues": [
                    {
                        "name": "root",
                        "queues": [
                            {"name": "a", "resources": {"max": {"memory": "lots"}}},
                            {"name": "b", "properties": {"preemption.policy": "fencing"}},
                            {"name": "b"},
                            {
                                "name": "c",
                                "resources": {"guaranteed": {"pods": 5}, "max": {"pods": 4}},
                            },
                        ],
                    }
                ],
            },
            {"name": "bad name"},
        ],
    }
    errors = errors_of(data)
    assert sorted(errors) == sorted(
        [
            "partition default: root.a: resources.max.memory",
            "partition default: root.b: properties.preemption.policy",
            "partition default: root: queues[2].name",
            "partition default: root.c: resources.max.pods",
            "partition default: preemption.enabled",
            "partition bad name: name",
            # A partition with a bad name is still read: its missing queues are a fault too.
            "partition bad name: queues",
            "version",
        ]
    )


def test_a_partition_with_errors_does_not_hide_another_partitions_errors() -> None:
    errors = errors_of(
        {
            "partitions": [
                {"name": "one", "queues": [{"name": "a", "resources": {"max": {"vcore": "x"}}}]},
                {"name": "two", "queues": [{"name": "a", "properties": {"preemption.delay": "0"}}]},
            ]
        }
    )
    assert sorted(errors) == [
        "partition one: root.a: resources.max.vcore",
        "partition two: root.a: properties.preemption.delay",
    ]


def test_kept_values_must_be_plain_data() -> None:
    errors = errors_of(doc({"name": "a", "adminacl": {1: "x"}}))
    assert list(errors) == ["root.a: adminacl.1"]


def test_dump_of_a_config_built_in_code_loads_back_equal() -> None:
    (config,) = load_scheduler_config(doc({"name": "a"}))
    changed = config.with_queue(
        replace(
            config.queue("root.a"),  # type: ignore[arg-type]
            guaranteed={"memory": GI},
            max={"memory": 3 * GI + 512 * MI, "vcore": 1500},
            properties={"quota.preemption.delay": "5m", "preemption.policy": "fence"},
        )
    )
    assert load_scheduler_config(dump_scheduler_config([changed])) == [changed]
