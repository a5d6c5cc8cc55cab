"""Schemathesis over the live OpenAPI schema: generated requests to every operation, as an
admin and as a viewer, must never get a 5xx and every response must match the schema (status
code, content type, headers, body). All operations are checked and every failure is reported
together."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import role_client
from tests.support.throttles import clear_throttle_counts

# Exactly what the product promises: no 5xx, and every response as documented. (Schemathesis'
# other default checks judge business rules instead: a schema-valid request may rightly be
# refused, e.g. a NUL byte in a filter or a stale version; and every request here carries a
# valid admin token, so its "invalid credentials accepted" check would misfire. Authentication,
# roles and validation have their own tests per endpoint.)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


#: Examples per operation: moderate for CI; raise it locally to shake out rarer failures
#: (``SCHEMA_EXAMPLES=200``, with ``API_WRITE_RATE=100000/min`` so writes are not throttled).
EXAMPLES = int(os.environ.get("SCHEMA_EXAMPLES", "10"))


@pytest.mark.parametrize("role", ["admin", "viewer"])
def test_every_operation_answers_within_its_schema(api_schema, role):
    """As an admin (every write allowed) and as a viewer (most writes answer 403, which the
    schema documents), over the whole schema: no 5xx and every response as documented."""
    clear_throttle_counts()  # throttling counters of earlier tests
    headers = {"Authorization": role_client(role)._credentials["HTTP_AUTHORIZATION"]}
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) > 30  # the whole surface of SPEC 7 is in the schema

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case) -> None:
            response = case.call(headers=headers)
            case.validate_response(response, checks=CHECKS)

        try:
            check()
        except Exception as exc:
            failures.append(f"{operation.label}:\n{exc}")
    assert not failures, "\n\n".join(failures)
