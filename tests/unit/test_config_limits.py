"""The engine's copies of the limits agree with ``scheduler_admin.base.limits`` (the engine may not
import Django, so it mirrors them; a config it accepts must fit the columns it is stored in)."""

from __future__ import annotations

from preemption import config as engine_config
from preemption import durations, hierarchy
from preemption.hierarchy import validate_config
from scheduler_admin.base import limits
from tests.unit.builders import config, locations, queue


def test_the_engine_mirrors_the_column_limits() -> None:
    assert engine_config.QUEUE_PATH_MAX_LENGTH == limits.QUEUE_PATH_MAX_LENGTH
    assert engine_config.PROPERTY_MAX_LENGTH == limits.PROPERTY_MAX_LENGTH
    assert engine_config.RESOURCE_NAME_MAX_LENGTH == limits.RESOURCE_NAME_MAX_LENGTH
    assert engine_config.DOCUMENT_MAX_DEPTH == limits.DOCUMENT_MAX_DEPTH
    assert engine_config.MAX_DEVIATION_PERCENT == limits.DEVIATION_PERCENT_MAX
    assert engine_config.MAX_VICTIMS_LIMIT == limits.MAX_VICTIMS_MAX <= limits.POSITIVE_INT_MAX
    assert durations.MAX_DURATION == limits.DURATION_MAX_SECONDS == limits.POSITIVE_INT_MAX


def test_queue_names_are_as_long_as_their_column() -> None:
    longest = "q" * limits.QUEUE_NAME_MAX_LENGTH
    assert hierarchy.NAME_PATTERN.fullmatch(longest)
    assert not hierarchy.NAME_PATTERN.fullmatch(longest + "q")


# --- validate_config refuses what the columns cannot hold ---------------------------------------


NUL, SURROGATE = "\x00", "\ud800"


def _errors(*queues, **settings) -> list[str]:
    return [str(error) for error in validate_config(config(*queues, **settings))]


def test_durations_past_the_integer_column_are_refused() -> None:
    too_long = str(limits.DURATION_MAX_SECONDS + 1)
    errors = validate_config(
        config(
            queue("root.a", properties={"preemption.delay": too_long}),
            queue("root.b", properties={"quota.preemption.delay": "596524h"}),
            default_preemption_delay=2**31,
            daemonset_preemption_delay=10**30,
        )
    )
    assert locations(errors) == [
        "partition.daemonset_preemption_delay",
        "partition.default_preemption_delay",
        "queues[root.a].properties.preemption.delay",
        "queues[root.b].properties.quota.preemption.delay",
    ]
    assert all("too large" in e.message or "<= 2147483647" in e.message for e in errors)
    longest = str(limits.DURATION_MAX_SECONDS)
    assert _errors(queue("root.a", properties={"preemption.delay": longest})) == []


def test_a_queue_path_longer_than_its_column_is_refused() -> None:
    parent, queues = "root", []
    while len(parent) <= limits.QUEUE_PATH_MAX_LENGTH:
        parent = f"{parent}.{'q' * 60}"
        queues.append(queue(parent))
    errors = validate_config(config(*queues))
    assert errors and all(e.field == "path" for e in errors)
    assert "over the limit of 1024" in errors[0].message


def test_properties_that_cannot_be_stored_are_refused_with_a_printable_location() -> None:
    errors = validate_config(
        config(
            queue(
                "root.a",
                properties={
                    f"k{NUL}": "1", "nul": f"a{NUL}", SURROGATE: "1", "sur": SURROGATE,
                    "long": "x" * (limits.PROPERTY_MAX_LENGTH + 1),
                },
            )
        )
    )  # fmt: skip
    assert locations(errors) == sorted(
        [
            "queues[root.a].properties.k\\u0000",
            "queues[root.a].properties.long",
            "queues[root.a].properties.nul",
            "queues[root.a].properties.sur",
            "queues[root.a].properties.\\ud800",
        ]
    )
    for error in errors:
        str(error).encode("utf-8")  # renderable: no raw surrogate in a message or location


def test_kept_keys_must_be_storable_json() -> None:
    deep: object = 1
    for _ in range(limits.DOCUMENT_MAX_DEPTH + 1):
        deep = [deep]
    errors = validate_config(
        config(
            queue("root.a", extra={"submitacl": NUL, "limits": deep}),
            queue("root.b", extra={"adminacl": SURROGATE, "maxapplications": float("inf")}),
            extra={"placementrules": [{NUL: "x"}], "nodesortpolicy": {"type": float("nan")}},
        )
    )
    assert locations(errors) == [
        "partition.extra.nodesortpolicy.type",
        "partition.extra.placementrules[0].\\u0000",
        "queues[root.a].extra.limits" + "[0]" * (limits.DOCUMENT_MAX_DEPTH - 1),
        "queues[root.a].extra.submitacl",
        "queues[root.b].extra.adminacl",
        "queues[root.b].extra.maxapplications",
    ]


def test_resource_names_that_cannot_be_stored_are_refused() -> None:
    errors = _errors(
        queue("root.a", max={f"mem{NUL}": 1, "r" * (limits.RESOURCE_NAME_MAX_LENGTH + 1): 1})
    )
    assert len(errors) == 2 and any("NUL" in e for e in errors)
