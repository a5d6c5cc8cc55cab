"""The query string is held to the OpenAPI schema on every operation (``api.query``), and the
schema says what the server accepts (schemathesis' 145 findings: ``page=0`` documented as a
page, NUL bytes, enum and boolean filters taking anything, a 414 from gunicorn in HTML).

- Unknown ``ordering`` values are a 400 naming the value, on every list (DRF dropped them and
  answered in the default order as if the sort had been applied).
- Every optional parameter of a read may be sent empty, meaning "not given", where the schema
  says so (``allowEmptyValue``), as HTML filter forms send them.
- Values the schema rules out are a 400 naming the parameter: ``page=0``, ``status=bogus``,
  ``schedulable=maybe``, ``run=1.5``, a parameter given twice.
- A URL over 128 KiB is a 414 with the API's error body; every URL the schema allows is shorter.
- The exact patterns behind it (list times, ``If-Match``): ``tests/unit/test_query_patterns.py``.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from scheduler_admin.base import limits
from tests.api.conftest import assert_error, role_client

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
#: Sample values of path parameters (404 for an object that is not there is fine here).
PATH_VALUES = {
    "partition": "default",
    "path": "root.team.b",
    "id": "1",
    "request_id": "1",
    "number": "1",
    "external_id": "a1",
    "name": "n1",
}


def _schema() -> dict:
    return role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()


@pytest.mark.parametrize(
    ("url", "value", "wrong"),
    [
        ("/api/v1/partitions/", "bogus", ["bogus"]),
        ("/api/v1/partitions/", "name,-nmae", ["-nmae"]),
        (f"{API}/revisions/", "-numbr", ["-numbr"]),
        ("/api/v1/runs/", "created_at,status", ["status"]),
        (f"{API}/nodes/", " name", [" name"]),
    ],
)
def test_an_unknown_ordering_is_a_400_naming_the_value(live, url, value, wrong):
    response = role_client("viewer").get(url, {"ordering": value})
    errors = " ".join(assert_error(response, 400, "ordering")["errors"]["ordering"])
    assert all(repr(term) in errors for term in wrong), errors


def test_the_fields_a_list_sorts_by_still_sort(live):
    viewer = role_client("viewer")
    names = [row["number"] for row in viewer.get(f"{API}/revisions/?ordering=number").json()[
        "results"]]  # fmt: skip
    assert names == sorted(names) and len(names) > 1
    reverse = viewer.get(f"{API}/revisions/", {"ordering": "-number,created_at"}).json()
    assert [row["number"] for row in reverse["results"]] == sorted(names, reverse=True)
    assert viewer.get(f"{API}/revisions/", {"ordering": ""}).status_code == 200


def test_the_ordering_filter_itself_refuses_unknown_fields(live):
    """Below the query contract too: a view whose schema did not list its fields still
    refuses what it cannot sort by."""
    from rest_framework.exceptions import ValidationError
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from scheduler_admin.api.queues.queue_views import PartitionList
    from scheduler_admin.base.api.ordering import StableOrderingFilter
    from scheduler_admin.queues.models import Partition

    request = Request(APIRequestFactory().get("/", {"ordering": "-bogus"}))
    with pytest.raises(ValidationError) as refused:
        StableOrderingFilter().filter_queryset(request, Partition.objects.all(), PartitionList())
    assert "'-bogus'" in str(refused.value.detail)


def test_every_optional_read_parameter_may_be_empty_where_the_schema_says_so(live):
    viewer = role_client("viewer")
    failures = []
    checked = 0
    for path, operations in _schema()["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        url = re.sub(r"\{(\w+)\}", lambda m: quote(PATH_VALUES[m.group(1)], safe=""), path)
        for parameter in operation.get("parameters", []):
            if parameter["in"] != "query" or not parameter.get("allowEmptyValue"):
                continue
            checked += 1
            response = viewer.get(f"{url}?{parameter['name']}=")
            if response.status_code == 400 or response.status_code >= 500:
                failures.append(f"{path}?{parameter['name']}=: {response.status_code}")
    assert checked > 100
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    ("url", "field"),
    [
        (f"{API}/revisions/?page=0", "page"),
        (f"{API}/revisions/?page=last", "page"),
        (f"{API}/revisions/?page_size=0", "page_size"),
        (f"{API}/timers/?status=bogus", "status"),
        (f"{API}/nodes/?schedulable=maybe", "schedulable"),
        (f"{API}/allocations/?originator=yes", "originator"),
        (f"{API}/evictions/?run=1.5", "run"),
        (f"{API}/evictions/?run=-2", "run"),
        (f"{API}/timers/?status=pending&status=fired", "status"),
        ("/api/v1/audit/?kind=", "kind"),
        ("/api/v1/audit/?since=03/01/2026", "since"),
        ("/api/v1/audit/?since=2026-02-30", "since"),
        (f"{API}/revisions/?author_name=" + "a" * 1025, "author_name"),
    ],
)
def test_values_the_schema_rules_out_are_a_400_naming_the_parameter(live, url, field):
    assert_error(role_client("viewer").get(url), 400, field)


def test_a_url_over_the_limit_is_a_414_with_the_error_body(live):
    response = role_client("viewer").get(f"{API}/nodes/?q=" + "a" * limits.URL_MAX_BYTES)
    assert_error(response, 414, "url")


def test_every_url_the_schema_allows_fits_under_the_limit(live):
    """Each text at most its maxLength, each character at most 12 bytes once encoded (a 4-byte
    UTF-8 character percent-encoded), each array at most maxItems values."""
    longest = 0
    for path, operations in _schema()["paths"].items():
        for operation in operations.values():
            size = len(path) + 12 * limits.QUEUE_PATH_MAX_LENGTH * path.count("{")
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "query":
                    continue
                schema = parameter["schema"]
                items = schema.get("maxItems", 1) if schema.get("type") == "array" else 1
                size += items * (len(parameter["name"]) + 2 + 12 * _longest(schema))
            longest = max(longest, size)
    assert longest < limits.URL_MAX_BYTES, longest


def _longest(schema: dict) -> int:
    if schema.get("type") == "array":
        return _longest(schema["items"])
    if "enum" in schema:
        return max(len(str(value)) for value in schema["enum"])
    if schema.get("type") in ("integer", "number"):
        return 20
    if schema.get("type") == "boolean":
        return 5
    if schema.get("format") == "date-time":
        return 40  # 2026-03-01T12:00:00.123456789+01:00
    assert "maxLength" in schema or ("pattern" in schema and "*" not in schema["pattern"]), schema
    return schema.get("maxLength", 64)
