"""A config body's queues are read directly when they are plain (``_plain_queue_item``) and by
``ConfigQueueSerializer`` otherwise: the direct reading must give exactly what the serializer
gives (same keys in the same order, same values), and leave to it every item it would refuse
or change (trimmed text, unknown keys, kept keys, bad quantities, a disagreeing path)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from scheduler_admin.api.queues.serializers import (
    ConfigQueueSerializer,
    ConfigSerializer,
    _plain_queue_item,
)

TEXTS = ("q1", "root", "root.a", " q1", "q1 ", "", "a" * 64, "a" * 65, "q\x00", 5, None, True)
PARENTS = ("root", "root.a", None, "", " root", "r" * 1025, 3)
AMOUNTS = (
    {},
    {"vcore": "2", "memory": "8Gi"},
    {"memory": 1024, "vcore": 500},
    {"vcore": "1.5"},
    {"memory": "1.5"},
    {"vcore": "-1"},
    {"vcore": True},
    {"": "1"},
    None,
    [],
    {"nvidia.com/gpu": "2"},
)
PROPERTIES = (
    {},
    {"quota.preemption.delay": "2m"},
    {"preemption.policy": "fence", "x": ""},
    {"a": " padded "},
    {"a": 5},
    {"": "x"},
    {"k" * 257: "v"},
    {"k": "v" * 257},
    {"k": "v\x00"},
    None,
    "text",
)
EXTRAS = ({}, {"maxapplications": 5}, {"bogus": 1}, None, [])


def _item(rng: random.Random) -> dict[str, object]:
    item: dict[str, object] = {}
    for key, choices, chance in (
        ("name", TEXTS, 0.97),
        ("parent", PARENTS, 0.9),
        ("guaranteed", AMOUNTS, 0.8),
        ("max", AMOUNTS, 0.8),
        ("properties", PROPERTIES, 0.6),
        ("extra", EXTRAS, 0.5),
    ):
        if rng.random() < chance:
            # Mostly the plain shape a GET returns, sometimes anything.
            item[key] = choices[0 if rng.random() < 0.5 else rng.randrange(len(choices))]
    if rng.random() < 0.5:
        parent, name = item.get("parent"), item.get("name")
        placed = f"{parent}.{name}" if parent else name
        item["path"] = placed if rng.random() < 0.8 else "root.elsewhere"
    if rng.random() < 0.05:
        item["bogus"] = 1
    return item


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_a_plain_item_reads_as_the_serializer_reads_it(seed: int) -> None:
    item = _item(random.Random(seed))
    plain = _plain_queue_item(item)
    try:
        expected = ConfigQueueSerializer().run_validation(item)
    except serializers.ValidationError:
        assert plain is None  # the serializer reports it
        return
    if plain is not None:
        assert list(plain.items()) == list(expected.items())


def test_the_shape_a_get_returns_is_plain() -> None:
    item = {
        "path": "root.a", "parent": "root", "name": "a",
        "guaranteed": {"memory": "8Gi", "vcore": "2"}, "max": {"vcore": "4"},
        "properties": {"quota.preemption.delay": "2m"}, "extra": {},
    }  # fmt: skip
    assert _plain_queue_item(item) == ConfigQueueSerializer().run_validation(item)
    assert _plain_queue_item(item) is not None


@pytest.mark.parametrize("bad", [{"name": ""}, {"max": {"vcore": "x"}}, {"bogus": 1}])
def test_a_body_reports_errors_per_item_as_before(bad: dict[str, object]) -> None:
    good = {"name": "root", "parent": None}
    item = {"name": "a", "parent": "root", **bad}
    body = ConfigSerializer(data={"partition": {}, "queues": [good, item]})
    assert not body.is_valid()
    direct = ConfigQueueSerializer(data=item)
    assert not direct.is_valid()
    assert body.errors["queues"] == {1: direct.errors}


def test_text_to_trim_is_trimmed_as_before() -> None:
    item = {"name": " a ", "parent": "root", "properties": {"k": " v "}}
    assert _plain_queue_item(item) is None
    body = ConfigSerializer(data={"partition": {}, "queues": [{"name": "root"}, item]})
    assert body.is_valid(), body.errors
    queue = body.validated_data["queues"][1]
    assert (queue["name"], queue["properties"]) == ("a", {"k": "v"})
