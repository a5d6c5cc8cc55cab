"""The OpenAPI schema says what the server does, checked on the answers schemathesis' random
requests rarely reach: each request below is built from the schema's own operation, sent, and
its response validated against the schema (status code, content type, headers, body).

Also what the schema promises about request bodies: required fields where the server requires
them, a DELETE body, JSON only where bodies nest, 413 on every operation that takes a body.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import yaml
from django.conf import settings

from scheduler_admin.enforcement.models import QuotaTimer
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from tests.api.conftest import TOKEN_USER_PASSWORD, role_client
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
        body={"comment": "x", "version": Partition.objects.get(name="default").version},
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
        body=f"comment=back&version={Partition.objects.get(name='default').version}",
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
    assert _required(schema, f"{P}/revisions/{{number}}/revert", "post") == {"version"}


def test_nested_bodies_are_json_only_and_every_body_may_be_413(schema):
    flat = {
        ("/api/v1/auth/token/", "post"),
        (f"{P}/queues/{{path}}/", "delete"),
        (f"{P}/revisions/{{number}}/revert", "post"),
        ("/api/v1/runs/{id}/abort", "post"),
        (f"{P}/timers/{{id}}/cancel", "post"),
        (f"{P}/scheduled-changes/{{id}}/cancel", "post"),
        (f"{P}/evictions/{{id}}/ack", "post"),
        *((f"{P}/change-requests/{{request_id}}/{a}/", "post") for a in
          ("approve", "reject", "withdraw")),
    }  # fmt: skip
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


def test_each_kind_of_answer_matches_its_documented_schema(api_schema, live):
    """The answers of the root, the lists and every write (a dry run and a real save of a
    queue, of the JSON and YAML config, validate, simulate, a cluster-state push, cancel, ack,
    abort, token): each validated against the schema of its operation."""
    default = {"partition": "default"}
    queue = {**default, "path": "root.team.b"}
    call = functools.partial(_call, api_schema, media_type="application/json")

    assert set(call("/api/v1/", "GET").json()["by_partition"][0]) >= {"queues", "simulate"}
    assert call(f"{P}/queues/", "GET", path_parameters=default).json()["count"] == 4
    version = Queue.objects.get(path="root.team.b").version
    patch = {"max": {"memory": "5G"}, "version": version, "comment": "c"}
    preview = call(f"{P}/queues/{{path}}/", "PATCH", path_parameters=queue, body=patch,
                   query={"dry_run": "true"}).json()  # fmt: skip
    assert preview["dry_run"] is True and preview["valid"] is True
    assert {"timers", "plans", "yunikorn_min_version", "warnings"} <= set(preview)
    saved = call(f"{P}/queues/{{path}}/", "PATCH", path_parameters=queue, body=patch).json()
    assert saved["max"] == {"memory": "5G"} and saved["version"] == version + 1

    config = call(f"{P}/config", "GET", path_parameters=default).json()
    config["queues"][1]["max"] = {"memory": "90G"}
    body = {**config, "comment": "c"}
    preview = call(f"{P}/config", "PUT", path_parameters=default, body=body,
                   query={"dry_run": "true"}).json()  # fmt: skip
    assert preview["dry_run"] is True and [t["queue"] for t in preview["timers"]] == ["root.team"]
    assert call(f"{P}/config", "PUT", path_parameters=default, body=body).json()["version"]
    document = yaml.safe_load(call(f"{P}/config.yaml", "GET", path_parameters=default).text)
    document["partitions"][0]["queues"][0]["queues"][0]["resources"]["max"]["memory"] = "80G"
    preview = _call(api_schema, f"{P}/config.yaml", "PUT", path_parameters=default,
                    body=document, media_type="application/yaml",
                    query={"dry_run": "true"}).json()  # fmt: skip
    assert preview["dry_run"] is True
    checked = call(f"{P}/config/validate", "POST", path_parameters=default, body=config).json()
    assert checked["valid"] is True and checked["changes"] == []
    number = ConfigRevision.objects.order_by("-number").first().number
    detail = call(f"{P}/revisions/{{number}}/", "GET", path_parameters={**default,
                  "number": number}).json()  # fmt: skip
    assert detail["diff"][0]["new"] == "90G"

    what_if = {"policy": "quota", "queue": "root.team", "max": {"memory": "50G"}}
    plan = call(f"{P}/simulate", "POST", path_parameters=default, body=what_if).json()
    assert plan["policy"] == "quota" and plan["explanations"]
    state = {"nodes": [{"name": "n2", "capacity": {"memory": "10G"}}]}
    pushed = call(f"{P}/cluster-state", "POST", path_parameters=default, body=state).json()
    assert pushed["changed"]

    timer = QuotaTimer.objects.filter(status="pending").order_by("id").first()
    cancelled = call(f"{P}/timers/{{id}}/cancel", "POST", path_parameters={**default,
                     "id": timer.pk}, body={}).json()  # fmt: skip
    assert cancelled["status"] == "cancelled"
    acked = call(f"{P}/evictions/{{id}}/ack", "POST", path_parameters={**default,
                 "id": live.order.pk}, body={}).json()  # fmt: skip
    assert acked["status"] == "acknowledged"
    aborted = call("/api/v1/runs/{id}/abort", "POST", path_parameters={"id": live.active_run.pk},
                   body={"comment": "stop"}).json()  # fmt: skip
    assert aborted["status"] == "failed"
    credentials = {"username": "token-user", "password": TOKEN_USER_PASSWORD}
    token = call("/api/v1/auth/token/", "POST", body=credentials).json()
    assert token["token"].startswith("sa_") and token["name"] == "api"


def test_the_cluster_agents_answers_match_their_documented_schema(api_schema, live):
    """What the cluster agent sends and reads: a replace push, a heartbeat, the agents list,
    an eviction report, the orders with the cluster's answer, a run's victims, and the
    published config with its revision header."""
    default = {"partition": "default"}
    call = functools.partial(_call, api_schema, media_type="application/json")
    state = {"nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}], "replace": True,
             "remove": {"budgets": ["pdb1"]}}  # fmt: skip
    pushed = call(f"{P}/cluster-state", "POST", path_parameters=default, body=state).json()
    assert pushed["replace"] is True and pushed["removed"]["budgets"] == 1
    beat = {"name": "agent-1", "cluster": "kind", "started_at": "2026-03-01T12:00:00Z",
            "running_revision": 1, "publishing": True, "lag_seconds": 1.5,
            "counts": {"nodes": 1}}  # fmt: skip
    answer = call(f"{P}/agents/heartbeat", "POST", path_parameters=default, body=beat).json()
    assert answer["agent"]["running_revision"] == 1 and answer["config_revision"] >= 1
    assert call(f"{P}/agents/", "GET", path_parameters=default).json()["count"] == 1
    report = {"orders": [{"id": live.order.pk, "status": "blocked", "reason": "pdb",
                          "code": 429}, {"id": 999999, "status": "failed"}]}  # fmt: skip
    reported = call(f"{P}/evictions/report", "POST", path_parameters=default, body=report)
    assert reported.json()["reported"] == 1 and reported.json()["not_found"] == 1
    order = call(f"{P}/evictions/{{id}}/", "GET", path_parameters={**default,
                 "id": live.order.pk}).json()  # fmt: skip
    assert order["cluster_status"] == "blocked"
    run = call("/api/v1/runs/{id}/", "GET", path_parameters={"id": live.order.run_id}).json()
    assert any(victim["eviction"] for victim in run["victims"])
    published = call(f"{P}/config.yaml", "GET", path_parameters=default,
                     query={"publish": "true"})  # fmt: skip
    assert published.headers["x-config-revision"] == [str(answer["config_revision"])]
