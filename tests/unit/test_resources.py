"""Tests for preemption.resources: parsing, formatting and resource-set arithmetic."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from preemption.resources import (
    MAX_QUANTITY,
    QuantityError,
    ResourceErrors,
    add,
    fits,
    format_quantity,
    format_resources,
    is_zero,
    limit_min,
    over,
    parse_quantity,
    parse_resources,
    positive_part,
    shares_type,
    sub_only_existing,
    subtract,
)

KI = 1024
GI = 1024**3

# --------------------------------------------------------------------------------------------
# parse_quantity
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        # plain numbers, int and str
        ("memory", 0, 0),
        ("memory", "0", 0),
        ("memory", 8, 8),
        ("memory", "8", 8),
        ("memory", "  8  ", 8),
        ("memory", "007", 7),
        ("pods", "110", 110),
        ("nvidia.com/gpu", 2, 2),
        ("memory", MAX_QUANTITY, MAX_QUANTITY),
        ("memory", str(MAX_QUANTITY), MAX_QUANTITY),
        # decimal suffixes
        ("memory", "1k", 1000),
        ("memory", "2M", 2_000_000),
        ("memory", "10G", 10_000_000_000),
        ("memory", "3T", 3 * 1000**4),
        ("memory", "4P", 4 * 1000**5),
        ("memory", "5E", 5 * 1000**6),
        ("memory", "1.5G", 1_500_000_000),
        ("memory", "0.5k", 500),
        # binary suffixes
        ("memory", "1Ki", KI),
        ("memory", "2Mi", 2 * 1024**2),
        ("memory", "10Gi", 10 * GI),
        ("memory", "1.5Gi", 1_610_612_736),
        ("memory", "3Ti", 3 * 1024**4),
        ("memory", "4Pi", 4 * 1024**5),
        ("memory", "7Ei", 7 * 1024**6),
        ("memory", "0.5Ki", 512),
        # milli on a non-vcore type: fine when the result is whole
        ("memory", "2000m", 2),
        ("pods", "0m", 0),
        # vcore: bare numbers are cores, the result is millicores
        ("vcore", 10, 10_000),
        ("vcore", "10", 10_000),
        ("vcore", "0", 0),
        ("vcore", "0.5", 500),
        ("vcore", "1.25", 1250),
        ("vcore", "0.001", 1),
        ("vcore", "500m", 500),
        ("vcore", "1500m", 1500),
        ("vcore", "1k", 1_000_000),
        ("vcore", "1Ki", 1_024_000),
        ("vcore", " 2 ", 2000),
    ],
)
def test_parse_quantity_accepts_valid_values(resource: str, value: object, expected: int) -> None:
    assert parse_quantity(value, resource=resource, field="resources.max.x") == expected


@pytest.mark.parametrize(
    ("resource", "value", "message_part"),
    [
        ("memory", "-5", "must not be negative"),
        ("memory", -5, "must not be negative"),
        ("vcore", "-1", "must not be negative"),
        ("memory", "-1Gi", "must not be negative"),
        ("memory", "1.5", "fractional quantities are not allowed"),
        ("memory", "500m", "fractional quantities are not allowed"),
        ("pods", "0.5", "fractional quantities are not allowed"),
        ("nvidia.com/gpu", "1.5k1", "unknown suffix"),
        ("vcore", "0.0005", "must be a whole number of millicores"),
        ("memory", "1K", "unknown suffix 'K'"),
        ("memory", "1g", "unknown suffix 'g'"),
        ("memory", "1KB", "unknown suffix 'KB'"),
        ("memory", "1Gb", "unknown suffix 'Gb'"),
        ("memory", "1mi", "unknown suffix 'mi'"),
        ("memory", "1e3", "unknown suffix 'e3'"),
        ("memory", "10 G B", "spaces are not allowed inside a suffix"),
        ("memory", "abc", "is not a number"),
        ("memory", "Gi", "is not a number"),
        ("memory", "+5", "is not a number"),
        ("memory", ".5", "is not a number"),
        ("memory", "", "is not a number"),
        ("memory", "   ", "is not a number"),
        ("memory", True, "is not a quantity"),
        ("vcore", False, "is not a quantity"),
        ("memory", 1.5, "floating-point"),
        ("memory", 2.0, "floating-point"),
        ("memory", None, "empty value"),
        ("memory", ["1"], "is not a quantity"),
        ("memory", "9223372036854775808", "too large"),
        ("memory", MAX_QUANTITY + 1, "too large"),
        ("memory", "10E", "too large"),
        ("memory", "8Ei", "too large"),
        ("vcore", 2**62, "too large"),
        ("memory", "1" * 100, "more than 64 digits"),
    ],
)
def test_parse_quantity_rejects_invalid_values(
    resource: str, value: object, message_part: str
) -> None:
    field = f"queues.root.resources.max.{resource}"
    with pytest.raises(QuantityError) as info:
        parse_quantity(value, resource=resource, field=field)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert message_part in str(info.value)
    assert message_part in info.value.message


def test_parse_quantity_error_quotes_the_bad_value() -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity("12XB", resource="memory", field="f")
    assert "'12XB'" in str(info.value)


def test_quantity_error_str_is_field_colon_message() -> None:
    error = QuantityError("resources.max.memory", "bad")
    assert str(error) == "resources.max.memory: bad"
    assert isinstance(error, ValueError)


def test_quantity_error_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(QuantityError("a.b", "broken")))
    assert (error.field, error.message, str(error)) == ("a.b", "broken", "a.b: broken")


# --------------------------------------------------------------------------------------------
# format_quantity / format_resources
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("memory", 0, "0"),
        ("memory", 8, "8"),
        ("memory", 1000, "1k"),
        ("memory", 1024, "1Ki"),
        ("memory", 1536, "1536"),
        ("memory", 10_000_000_000, "10G"),
        ("memory", 10 * GI, "10Gi"),
        ("memory", 1_024_000, "1024k"),
        ("memory", 2 * 1024**6, "2Ei"),
        ("pods", 110, "110"),
        ("nvidia.com/gpu", 4, "4"),
        ("memory", 12_000, "12k"),
        ("vcore", 0, "0"),
        ("vcore", 10_000, "10"),
        ("vcore", 500, "500m"),
        ("vcore", 1500, "1500m"),
        ("vcore", 1_000_000, "1000"),
    ],
)
def test_format_quantity_gives_shortest_exact_form(
    resource: str, value: int, expected: str
) -> None:
    assert format_quantity(value, resource=resource) == expected


def test_format_quantity_prefers_decimal_suffix_on_equal_length() -> None:
    # 10_112_000 is 10112k and 9875Ki: both six characters, so the decimal suffix wins.
    assert 10_112_000 == 10112 * 1000 == 9875 * 1024
    assert format_quantity(10_112_000, resource="memory") == "10112k"


def test_format_quantity_uses_plain_digits_when_no_suffix_divides() -> None:
    assert format_quantity(100, resource="memory") == "100"
    assert format_quantity(1, resource="memory") == "1"
    assert format_quantity(1023, resource="memory") == "1023"


def test_format_quantity_shows_negative_values_with_a_sign() -> None:
    assert format_quantity(-10 * GI, resource="memory") == "-10Gi"
    assert format_quantity(-500, resource="vcore") == "-500m"


def test_format_resources_sorts_names_and_formats_each_type() -> None:
    formatted = format_resources({"vcore": 1500, "memory": 10 * GI, "pods": 3})
    assert formatted == {"memory": "10Gi", "pods": "3", "vcore": "1500m"}
    assert list(formatted) == ["memory", "pods", "vcore"]


@pytest.mark.parametrize("resource", ["memory", "vcore", "pods", "nvidia.com/gpu"])
@pytest.mark.parametrize("value", [0, 1, 999, 1000, 1024, 1536, 10**18, 2**62, MAX_QUANTITY])
def test_format_then_parse_round_trips_edge_values(resource: str, value: int) -> None:
    text = format_quantity(value, resource=resource)
    assert parse_quantity(text, resource=resource, field="f") == value


@given(
    value=st.integers(min_value=0, max_value=2**62),
    resource=st.sampled_from(["memory", "vcore", "pods", "nvidia.com/gpu"]),
)
def test_format_then_parse_round_trips(value: int, resource: str) -> None:
    text = format_quantity(value, resource=resource)
    assert parse_quantity(text, resource=resource, field="f") == value


@given(
    mantissa=st.integers(min_value=0, max_value=9999),
    suffix=st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi"]),
)
def test_format_is_never_longer_than_an_integer_suffixed_input(mantissa: int, suffix: str) -> None:
    value = parse_quantity(f"{mantissa}{suffix}", resource="memory", field="f")
    text = format_quantity(value, resource="memory")
    assert parse_quantity(text, resource="memory", field="f") == value
    assert len(text) <= len(f"{mantissa}{suffix}")  # the input itself was a candidate


# --------------------------------------------------------------------------------------------
# parse_resources
# --------------------------------------------------------------------------------------------


def test_parse_resources_parses_every_type_in_canonical_units() -> None:
    parsed = parse_resources(
        {"memory": "10Gi", "vcore": "500m", "pods": 10, "nvidia.com/gpu": "2"},
        field="queues.root.resources.max",
    )
    assert parsed == {"memory": 10 * GI, "nvidia.com/gpu": 2, "pods": 10, "vcore": 500}


def test_parse_resources_treats_none_as_empty() -> None:
    assert parse_resources(None, field="resources.guaranteed") == {}


def test_parse_resources_accepts_an_empty_mapping() -> None:
    assert parse_resources({}, field="resources.guaranteed") == {}


def test_parse_resources_collects_every_error_with_its_field_path() -> None:
    with pytest.raises(ResourceErrors) as info:
        parse_resources(
            {"memory": "1x", "vcore": "0.0001", "pods": "3", "nvidia.com/gpu": -1},
            field="queues.root.resources.max",
        )
    fields = [error.field for error in info.value.errors]
    assert fields == [
        "queues.root.resources.max.memory",
        "queues.root.resources.max.vcore",
        "queues.root.resources.max.nvidia.com/gpu",
    ]
    assert str(info.value) == "; ".join(str(error) for error in info.value.errors)
    assert isinstance(info.value, ValueError)


def test_parse_resources_raises_resource_errors_even_for_one_error() -> None:
    with pytest.raises(ResourceErrors) as info:
        parse_resources({"memory": "1.5"}, field="resources.max")
    assert len(info.value.errors) == 1
    assert info.value.errors[0].field == "resources.max.memory"


@pytest.mark.parametrize("raw", ["10Gi", 5, ["memory"], ("memory", 1)])
def test_parse_resources_rejects_non_mappings(raw: object) -> None:
    with pytest.raises(ResourceErrors) as info:
        parse_resources(raw, field="resources.max")
    [error] = info.value.errors
    assert error.field == "resources.max"
    assert "must be a mapping of resource name to quantity" in str(error)


@pytest.mark.parametrize("key", ["", 5, None])
def test_parse_resources_rejects_keys_that_are_not_names(key: object) -> None:
    with pytest.raises(ResourceErrors) as info:
        parse_resources({key: 1, "memory": "1G"}, field="resources.max")
    [error] = info.value.errors
    assert error.field == "resources.max"
    assert "must be a mapping of resource name to quantity" in str(error)


def test_resource_errors_requires_at_least_one_error() -> None:
    with pytest.raises(ValueError):
        ResourceErrors([])


def test_resource_errors_survive_pickling() -> None:
    original = ResourceErrors([QuantityError("a", "x"), QuantityError("b", "y")])
    copy = pickle.loads(pickle.dumps(original))
    assert str(copy) == "a: x; b: y"
    assert [error.field for error in copy.errors] == ["a", "b"]


# --------------------------------------------------------------------------------------------
# Arithmetic and comparisons, with the missing-type rules
# --------------------------------------------------------------------------------------------


def test_fits_within_limit_on_every_limited_type() -> None:
    assert fits({"memory": 5, "vcore": 1000}, {"memory": 5, "vcore": 2000})


def test_fits_fails_when_one_type_exceeds_the_limit() -> None:
    assert not fits({"memory": 6, "vcore": 1000}, {"memory": 5, "vcore": 2000})


def test_fits_treats_a_type_missing_from_the_limit_as_unlimited() -> None:
    assert fits({"memory": 5, "nvidia.com/gpu": 10**6}, {"memory": 5})


def test_fits_treats_a_type_missing_from_the_amount_as_zero() -> None:
    assert fits({}, {"memory": 0, "vcore": 0})
    assert fits({"memory": 1}, {"memory": 1, "vcore": 0})


def test_fits_anything_within_an_empty_limit() -> None:
    assert fits({"memory": MAX_QUANTITY}, {})


def test_over_reports_only_exceeded_limited_types() -> None:
    usage = {"memory": 12, "vcore": 500, "pods": 99}
    limit = {"memory": 10, "vcore": 1000}
    assert over(usage, limit) == {"memory": 2}


def test_over_treats_a_type_missing_from_usage_as_zero() -> None:
    assert over({}, {"memory": 10}) == {}


def test_over_is_empty_exactly_when_usage_fits() -> None:
    usage = {"memory": 10, "vcore": 3000}
    limit = {"memory": 10, "vcore": 2000}
    assert over(usage, limit) == {"vcore": 1000}
    assert not fits(usage, limit)
    assert over(usage, {"memory": 10}) == {}
    assert fits(usage, {"memory": 10})


def test_sub_only_existing_keeps_only_base_types() -> None:
    guarantee = {"memory": 10, "vcore": 2000}
    usage = {"memory": 4, "pods": 7}
    assert sub_only_existing(guarantee, usage) == {"memory": 6, "vcore": 2000}


def test_sub_only_existing_may_go_negative() -> None:
    assert sub_only_existing({"memory": 1}, {"memory": 3}) == {"memory": -2}


def test_add_uses_the_union_of_types() -> None:
    assert add({"memory": 1, "vcore": 2}, {"vcore": 3, "pods": 4}) == {
        "memory": 1,
        "pods": 4,
        "vcore": 5,
    }


def test_subtract_uses_the_union_and_may_go_negative() -> None:
    assert subtract({"memory": 5}, {"memory": 2, "vcore": 3}) == {"memory": 3, "vcore": -3}


def test_positive_part_drops_zero_and_negative_types() -> None:
    assert positive_part({"memory": 3, "vcore": 0, "pods": -2}) == {"memory": 3}


def test_limit_min_takes_the_smaller_limit_per_type() -> None:
    assert limit_min({"memory": 10, "vcore": 1000}, {"memory": 5, "vcore": 2000}) == {
        "memory": 5,
        "vcore": 1000,
    }


def test_limit_min_keeps_a_type_limited_on_only_one_side() -> None:
    assert limit_min({"memory": 10}, {"vcore": 2000}) == {"memory": 10, "vcore": 2000}
    assert limit_min({}, {"pods": 3}) == {"pods": 3}


def test_limit_min_keeps_zero_limits() -> None:
    assert limit_min({"memory": 0}, {"memory": 10, "pods": 0}) == {"memory": 0, "pods": 0}


def test_shares_type_when_some_type_is_positive_in_both() -> None:
    assert shares_type({"memory": 1, "vcore": 0}, {"memory": 5})


def test_shares_type_ignores_zero_and_missing_types() -> None:
    assert not shares_type({"memory": 1, "vcore": 0}, {"vcore": 500, "pods": 1})
    assert not shares_type({"memory": 1}, {"memory": 0})
    assert not shares_type({}, {"memory": 1})


def test_is_zero_for_empty_and_all_zero_sets_only() -> None:
    assert is_zero({})
    assert is_zero({"memory": 0, "vcore": 0})
    assert not is_zero({"memory": 0, "vcore": 1})
    assert not is_zero({"memory": -1})


def test_operations_do_not_mutate_their_arguments() -> None:
    a = {"memory": 5, "vcore": 1000}
    b = {"memory": 7, "pods": 1}
    for result in (
        add(a, b),
        subtract(a, b),
        limit_min(a, b),
        sub_only_existing(a, b),
        over(a, b),
        positive_part(a),
    ):
        assert result is not a and result is not b
    assert a == {"memory": 5, "vcore": 1000}
    assert b == {"memory": 7, "pods": 1}


@given(
    a=st.dictionaries(st.sampled_from(["memory", "vcore", "pods"]), st.integers(0, 10**6)),
    b=st.dictionaries(st.sampled_from(["memory", "vcore", "pods"]), st.integers(0, 10**6)),
)
def test_subtract_undoes_add(a: dict[str, int], b: dict[str, int]) -> None:
    result = subtract(add(a, b), b)
    assert {name: value for name, value in result.items() if name in a} == a
    assert all(value == 0 for name, value in result.items() if name not in a)


@given(
    usage=st.dictionaries(st.sampled_from(["memory", "vcore", "pods"]), st.integers(0, 100)),
    limit=st.dictionaries(st.sampled_from(["memory", "vcore", "pods"]), st.integers(0, 100)),
)
def test_fits_agrees_with_over(usage: dict[str, int], limit: dict[str, int]) -> None:
    assert fits(usage, limit) == (over(usage, limit) == {})


def test_parse_quantity_reports_huge_inputs_without_flooding_the_message() -> None:
    # repr() of an int this large raises, and a very long string must not be quoted in full.
    for value in (10**5000, "9" * 5000, "1" + "Q" * 5000):
        with pytest.raises(QuantityError) as info:
            parse_quantity(value, resource="memory", field="f")
        assert len(str(info.value)) < 400
