"""The exact patterns the OpenAPI schema gives for list times and ``If-Match``, held to the
server's own parsing: every value a pattern allows is read, and values it rules out are refused
(so schemathesis, which generates from the patterns, never sends a valid request the server
refuses)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_admin.base.api.concurrency import (
    IF_MATCH_PATTERN,
    expected_version,
    whole_numbers_up_to,
)
from scheduler_admin.base.api.filters import ISO_TIME_PATTERN, UTCDateTimeField


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.from_regex(ISO_TIME_PATTERN))
def test_every_time_the_list_pattern_allows_is_a_time_the_server_reads(value):
    assert UTCDateTimeField().clean(value) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.from_regex(IF_MATCH_PATTERN))
def test_every_if_match_the_schema_allows_is_read(value):
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    request = Request(APIRequestFactory().patch("/", HTTP_IF_MATCH=value))
    assert expected_version(request, None) >= 1


@pytest.mark.parametrize("value", ['"x-v0"', '"x-v2147483648"', '"x-v07"', "x-v1", '"a"b-v1"'])
def test_an_if_match_the_schema_rules_out_is_refused(value):
    from rest_framework.exceptions import ValidationError
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    assert not re.fullmatch(IF_MATCH_PATTERN, value)
    request = Request(APIRequestFactory().patch("/", HTTP_IF_MATCH=value))
    with pytest.raises(ValidationError):
        expected_version(request, None)


@pytest.mark.parametrize("maximum", [1, 9, 10, 99, 100, 305, 2147])
def test_whole_numbers_up_to_matches_exactly_one_to_the_maximum(maximum):
    pattern = re.compile(whole_numbers_up_to(maximum))
    matched = [n for n in range(0, maximum * 3 + 10) if pattern.fullmatch(str(n))]
    assert matched == list(range(1, maximum + 1))
    assert not pattern.fullmatch("0" + str(maximum))


@pytest.mark.parametrize(
    "value", ["2026-02-29", "1900-02-29", "0000-01-01", "2026-03-01T24:00", "2026-03-01 12:00"]
)
def test_the_time_pattern_rules_out_days_and_hours_that_do_not_exist(value):
    assert not re.fullmatch(ISO_TIME_PATTERN, value)
