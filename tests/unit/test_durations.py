"""Tests for preemption.durations: Go durations as YuniKorn reads them, plus plain seconds."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from preemption.durations import (
    MAX_DURATION,
    DurationError,
    duration_spelling,
    format_duration,
    parse_duration,
    parse_go_duration,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (90, 90),
        (7200, 7200),
        (MAX_DURATION, MAX_DURATION),
        ("0", 0),
        ("7200", 7200),
        ("  7200  ", 7200),
        ("0s", 0),
        ("30s", 30),
        ("5m", 300),
        ("2h", 7200),
        ("1h30m", 5400),
        ("1h30m0s", 5400),
        ("1h1m1s", 3661),
        ("1h0m", 3600),
        ("90s", 90),
        ("90m", 5400),
        ("48h", 172_800),
        ("5m30s", 330),
        ("1h30s", 3630),
        (" 1h30m\n", 5400),
        ("007s", 7),
        # Go's syntax as YuniKorn reads it (time.ParseDuration): any order, repeats, decimals,
        # sub-second units, a sign. Sub-second remainders round up to the next whole second.
        ("1h0m30s", 3630),
        ("30m1h", 5400),
        ("30s1m", 90),
        ("1h1h", 7200),
        ("1.5m", 90),
        ("1.5s", 2),
        ("1.2s", 2),
        (".5s", 1),
        ("5.s", 5),
        ("0.1h", 360),
        ("50ms", 1),
        ("1500ms", 2),
        ("2000ms", 2),
        ("10us", 1),
        ("10µs", 1),
        ("10μs", 1),
        ("10ns", 1),
        ("+5s", 5),
        ("-0s", 0),
        ("+0", 0),
    ],
)
def test_parse_duration_accepts_valid_values(value: object, expected: int) -> None:
    assert parse_duration(value, field="preemption.delay") == expected


@pytest.mark.parametrize(
    ("value", "nanoseconds"),
    [
        ("50ms", 50_000_000),
        ("1.5m", 90 * 10**9),
        ("1h0m30s", 3630 * 10**9),
        ("30m1h", 5400 * 10**9),
        ("3.000000001s", 3 * 10**9 + 1),
        ("1.0000000001s", 10**9),  # digits below a nanosecond are dropped, as in Go
        ("-1.5h", -5400 * 10**9),
        ("1µs1ns", 1001),
        (60, 60 * 10**9),
        ("60", 60 * 10**9),
        ("-60", -60 * 10**9),
    ],
)
def test_parse_go_duration_keeps_the_exact_value(value: object, nanoseconds: int) -> None:
    assert parse_go_duration(value, field="f") == nanoseconds


@pytest.mark.parametrize(
    ("value", "spelling"),
    [
        (60, "60s"),
        ("60", "60s"),
        (" 0060 ", "60s"),
        (0, "0s"),
        ("0", "0s"),
        ("1m30s", "1m30s"),
        ("1.5m", "1.5m"),
        ("50ms", "50ms"),
        ("30m1h", "30m1h"),
        (" 1h ", "1h"),
    ],
)
def test_duration_spelling_always_has_a_unit(value: object, spelling: str) -> None:
    assert duration_spelling(value, field="f") == spelling
    # The spelling means the same duration and is stable.
    assert parse_go_duration(spelling, field="f") == parse_go_duration(value, field="f")
    assert duration_spelling(spelling, field="f") == spelling


@pytest.mark.parametrize(
    ("value", "message_part"),
    [
        (-1, "must not be negative"),
        ("-5s", "must not be negative"),
        ("-5", "must not be negative"),
        ("-1ms", "must not be negative"),
        ("1.5", "has no unit"),
        ("5d", "unknown unit 'd'"),
        ("5x", "unknown unit 'x'"),
        ("5H", "unknown unit 'H'"),
        ("5S", "unknown unit 'S'"),
        ("5 s", "unknown unit ' s'"),
        ("1h 30m", "unknown unit 'h '"),
        ("1h30", "has no unit"),
        (".s", "without digits"),
        ("", "the value is empty"),
        ("   ", "the value is empty"),
        ("abc", "is not a duration"),
        ("h", "is not a duration"),
        ("+", "is not a duration"),
        ("-", "is not a duration"),
        (True, "is not a duration"),
        (False, "is not a duration"),
        (1.5, "is not a duration"),
        (None, "is not a duration"),
        (["5s"], "is not a duration"),
        (MAX_DURATION + 1, "too large"),
        ("9" * 40, "too large"),
        ("99999999999999999999h", "too large"),
        ("2562047788015216h", "too large"),
        (2**31, "too large"),
        (str(2**31), "too large"),
        ("596524h", "too large"),
        ("596523h14m7.000000001s", "too large"),
        ("596523h14m7.000000001s", "too large"),
        ("596523h14m8s", "too large"),
        (10**30, "too large"),
    ],
)
def test_parse_duration_rejects_invalid_values(value: object, message_part: str) -> None:
    field = "queues.root.preemption.delay"
    with pytest.raises(DurationError) as info:
        parse_duration(value, field=field)
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")
    assert message_part in info.value.message


@pytest.mark.parametrize("value", ["5x", "1h30", "1.5", "abc", "-5s"])
def test_parse_duration_error_quotes_the_value(value: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration(value, field="f")
    assert repr(value) in str(info.value)


def test_duration_error_is_a_value_error_that_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(DurationError("a.b", "broken")))
    assert isinstance(error, ValueError)
    assert (error.field, error.message, str(error)) == ("a.b", "broken", "a.b: broken")


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "0s"),
        (1, "1s"),
        (59, "59s"),
        (60, "1m"),
        (90, "1m30s"),
        (3600, "1h"),
        (3601, "1h1s"),
        (3660, "1h1m"),
        (3661, "1h1m1s"),
        (5400, "1h30m"),
        (86_400, "24h"),
    ],
)
def test_format_duration_omits_zero_parts(seconds: int, expected: str) -> None:
    assert format_duration(seconds) == expected


def test_format_duration_rejects_negative_values() -> None:
    with pytest.raises(ValueError):
        format_duration(-1)


@given(st.integers(min_value=0, max_value=MAX_DURATION))
def test_format_then_parse_round_trips(seconds: int) -> None:
    assert parse_duration(format_duration(seconds), field="f") == seconds


@given(
    hours=st.integers(min_value=0, max_value=5 * 10**5),
    minutes=st.integers(min_value=0, max_value=10**6),
    secs=st.integers(min_value=0, max_value=10**6),
)
def test_parse_adds_up_all_parts(hours: int, minutes: int, secs: int) -> None:
    text = f"{hours}h{minutes}m{secs}s"
    assert parse_duration(text, field="f") == hours * 3600 + minutes * 60 + secs


def test_the_longest_duration_fits_a_postgresql_integer_column() -> None:
    # Delays are stored in PositiveIntegerField columns and added to timestamps.
    assert MAX_DURATION == 2**31 - 1
    assert parse_duration("596523h14m7s", field="f") == MAX_DURATION


def test_parse_duration_reports_huge_inputs_without_flooding_the_message() -> None:
    # repr() of an int this large raises, and a very long string must not be quoted in full.
    for value in (10**5000, "9" * 5000, "1" + "x" * 5000):
        with pytest.raises(DurationError) as info:
            parse_duration(value, field="f")
        assert len(str(info.value)) < 400


@given(
    parts=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=10**4), st.sampled_from(["h", "m", "s", "ms"])
        ),
        min_size=1,
        max_size=6,
    )
)
def test_go_parts_in_any_order_and_repeated_add_up(parts: list[tuple[int, str]]) -> None:
    scale = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6}
    text = "".join(f"{amount}{unit}" for amount, unit in parts)
    assert parse_go_duration(text, field="f") == sum(a * scale[u] for a, u in parts)
