"""The OpenAPI schema says what the server does, checked on the answers schemathesis' random
requests rarely reach: each request below is built from the schema's own operation, sent, and
its response validated against the schema (status code, content type, headers, body).

Also what the schema promises about request bodies: required fields where the server requires
them, a DELETE body, JSON only where bodies nest, 413 on every operation that takes a body.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.api.conftest import role_client
from tests.api.test_schema_conformance import CHECKS

pytestmark = pytest.mark.django_db

P = "/api/v1/partitions/{partition}"


@pytest.fixture
def schema(api_schema) -> dict[str, Any]:
    return api_schema.raw_schema


def _call(api_schema, path: str, method: str, role: str = "admin", **case: Any) -> Any:
    operation = api_schema[path][method]
    headers = {"Authorization": role_client(role)._credentials["HTTP_AUTHORIZATION"]}
    made = operation.Case(**case)
    response = made.call(headers=headers)
    made.validate_response(response, checks=CHECKS)
    return response


def test_revert_answers_201_with_the_new_revision_and_200_when_nothing_changed(api_schema):
    path = f"{P}/revisions/{{number}}/revert"
    params = {"partition": "default", "number": 1}
    # nothing changed since revision 1: 200, nothing written
    response = _call(
        api_schema,
        path,
        "POST",
        path_parameters=params,
        body={"comment": "x"},
        media_type="application/json",
    )
    assert response.status_code == 200 and response.json()["changed"] is False

    nightly = Queue.objects.get(path="root.batch.nightly")
    _call(
        api_schema,
        f"{P}/queues/{{path}}/",
        "PATCH",
        path_parameters={"partition": "default", "path": nightly.path},
        body={"comment": "c", "version": nightly.version, "properties": {"a": "b"}},
        media_type="application/json",
    )
    response = _call(
        api_schema,
        path,
        "POST",
        path_parameters=params,
        body="comment=back",
        media_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 201
    assert ConfigRevision.objects.filter(comment="back").exists()


def test_a_queue_delete_takes_its_version_and_comment_in_the_body(api_schema, schema):
    body = schema["paths"][f"{P}/queues/{{path}}/"]["delete"]["requestBody"]
    assert set(body["content"]) == {"application/json", "application/x-www-form-urlencoded"}
    queue = Queue.objects.get(path="root.batch.nightly")
    response = _call(
        api_schema,
        f"{P}/queues/{{path}}/",
        "DELETE",
        path_parameters={"partition": "default", "path": queue.path},
        body={"version": queue.version, "comment": "gone"},
        media_type="application/json",
    )
    assert response.status_code == 204
    assert not Queue.objects.filter(path="root.batch.nightly").exists()


def test_errors_are_documented_with_the_error_body(api_schema):
    # 400 with field errors, 404, 409 with current_version, 413: each as the schema says
    queue = {"partition": "default", "path": "root.batch.nightly"}
    operation = (f"{P}/queues/{{path}}/", "PATCH")
    _call(
        api_schema,
        *operation,
        path_parameters=queue,
        body={"comment": "c", "version": 0},
        media_type="application/json",
    )
    response = _call(
        api_schema,
        *operation,
        path_parameters=queue,
        body={"comment": "c", "version": 99},
        media_type="application/json",
    )
    assert response.status_code == 409 and "current_version" in response.json()
    response = _call(
        api_schema,
        *operation,
        path_parameters={**queue, "path": "root.nope"},
        body={"comment": "c", "version": 1},
        media_type="application/json",
    )
    assert response.status_code == 404
    big = {"comment": "c" * (settings.REQUEST_MAX_BYTES + 1), "version": 1}
    response = _call(
        api_schema, *operation, path_parameters=queue, body=big, media_type="application/json"
    )
    assert response.status_code == 413
    response = _call(
        api_schema,
        f"{P}/config",
        "PUT",
        path_parameters={"partition": "default"},
        body={
            "partition": {},
            "queues": [],
            "version": 1,
            "comment": "c" * (settings.CONFIG_MAX_BYTES + 1),
        },
        media_type="application/json",
    )
    assert response.status_code == 413


def test_a_viewer_is_refused_writes_as_documented(api_schema):
    response = _call(
        api_schema,
        f"{P}/revisions/{{number}}/revert",
        "POST",
        role="viewer",
        path_parameters={"partition": "default", "number": 1},
        body={},
        media_type="application/json",
    )
    assert response.status_code == 403


def _required(schema: dict[str, Any], path: str, method: str) -> set[str]:
    body = schema["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    name = body["$ref"].rsplit("/", 1)[-1]
    return set(schema["components"]["schemas"][name].get("required", []))


def test_required_fields_are_the_ones_the_server_requires(schema):
    assert _required(schema, f"{P}/queues/{{path}}/", "patch") == {"comment", "version"}
    assert _required(schema, f"{P}/queues/{{path}}/", "delete") == {"version"}
    assert _required(schema, f"{P}/queues/", "post") >= {"comment", "parent", "name"}
    assert _required(schema, f"{P}/", "patch") == {"comment"}
    assert _required(schema, f"{P}/config", "put") >= {"comment", "version"}
    assert _required(schema, f"{P}/revisions/{{number}}/revert", "post") == set()


def test_nested_bodies_are_json_only_and_every_body_may_be_413(schema):
    flat = {
        ("/api/v1/auth/token/", "post"),
        (f"{P}/queues/{{path}}/", "delete"),
        (f"{P}/revisions/{{number}}/revert", "post"),
    }
    with_body = 0
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if "requestBody" not in operation:
                continue
            with_body += 1
            assert {"413", "415"} <= set(operation["responses"]), (path, method)
            media = set(operation["requestBody"]["content"])
            if (path, method) not in flat:
                assert not {"multipart/form-data", "application/x-www-form-urlencoded"} & media
    assert with_body >= 11
