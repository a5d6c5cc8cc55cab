"""Every write refuses what it does not understand (issue 13, section 2).

``PATCH .../queues/{path}/`` with ``{"maximum": ...}`` once answered 200, changed nothing and
wrote no revision, and its dry run said ``valid: true``. Now every write operation in the served
OpenAPI schema, with and without ``?dry_run=true``, answers a body holding a field it does not
know with 400 naming that field (with its path when it is nested) and changes nothing.

The bodies below are otherwise valid (the error names the unknown field and nothing else), and
the objects they address exist (a pending timer, an active run, a pending eviction order), so
the 400 is due to the unknown field alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.enforcement.models import PreemptionRun
from scheduler_admin.notifications.models import Channel, Subscription
from scheduler_admin.queues.models import (
    ChangeRequest,
    ConfigRevision,
    Partition,
    Queue,
    ScheduledChange,
)
from scheduler_admin.queues.scheduled import schedule_queue_change
from tests.api.conftest import TOKEN_USER_PASSWORD, Live, assert_error, role_client
from tests.api.test_malformed_input import snapshot
from tests.support.factories.users import role_user
from tests.support.team import GB, TEAM_TASKS, team_config

pytestmark = pytest.mark.django_db

P = "/api/v1/partitions/{partition}"
API = "/api/v1/partitions/default"
UNKNOWN = "bogus_field"
N = "/api/v1/notifications"
SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#ops"


@dataclass(frozen=True)
class Write:
    """A valid request to one write operation, before the unknown field is added."""

    path: dict[str, Any]
    body: Any
    content_type: str = "application/json"


def _version(path: str) -> int:
    return Queue.objects.get(path=path).version


def _config() -> dict[str, Any]:
    return role_client("viewer").get(f"{API}/config").json()


def writes(live: Live) -> dict[tuple[str, str], Write]:
    """One valid request per write operation of the schema, keyed by (path, method)."""
    default = {"partition": "default"}
    partition_version = Partition.objects.get(name="default").version
    return {
        ("/api/v1/auth/token/", "post"): Write(
            {}, {"username": "token-user", "password": TOKEN_USER_PASSWORD}
        ),
        (f"{P}/", "patch"): Write(
            default, {"miss_percent": 5, "version": partition_version, "comment": "c"}
        ),
        (f"{P}/queues/", "post"): Write(
            default, {"parent": "root.team", "name": "c", "comment": "new"}
        ),
        (f"{P}/queues/{{path}}/", "patch"): Write(
            {**default, "path": "root.team.b"},
            {"max": {"memory": "5G"}, "version": _version("root.team.b"), "comment": "c"},
        ),
        (f"{P}/queues/{{path}}/", "delete"): Write(
            {**default, "path": "root.team.b"},
            {"version": _version("root.team.b"), "comment": "gone"},
        ),
        (f"{P}/config", "put"): Write(default, {**_config(), "comment": "put"}),
        (f"{P}/config.yaml", "put"): Write(
            default,
            team_config("2s").replace("memory: 400G", "memory: 300G"),
            "application/yaml",
        ),
        (f"{P}/config/validate", "post"): Write(default, _config()),
        (f"{P}/revisions/{{number}}/revert", "post"): Write(
            {**default, "number": 1}, {"comment": "undo"}
        ),
        (f"{P}/simulate", "post"): Write(
            default, {"policy": "quota", "queue": "root.team", "max": {"memory": "50G"}}
        ),
        (f"{P}/cluster-state", "post"): Write(
            default, {"nodes": [{"name": "n2", "capacity": {"memory": "10G"}}]}
        ),
        (f"{P}/timers/{{id}}/cancel", "post"): Write({**default, "id": live.timer.pk}, {}),
        (f"{P}/scheduled-changes/{{id}}/cancel", "post"): Write(
            {**default, "id": _scheduled_change()}, {}
        ),
        (f"{P}/evictions/{{id}}/ack", "post"): Write({**default, "id": live.order.pk}, {}),
        (f"{P}/evictions/acknowledge", "post"): Write(
            default, {"orders": [{"id": live.order.pk, "outcome": "evicted"}]}
        ),
        (f"{P}/evictions/report", "post"): Write(
            default, {"orders": [{"id": live.order.pk, "status": "blocked", "code": 429}]}
        ),
        (f"{P}/agents/heartbeat", "post"): Write(
            default, {"name": "agent-1", "started_at": "2026-03-01T12:00:00Z"}
        ),
        ("/api/v1/runs/{id}/abort", "post"): Write({"id": live.active_run.pk}, {"comment": "x"}),
        ("/api/v1/grants/", "post"): Write(
            {},
            {"partition": "default", "queue": "root.team.a", "role": "admin", "user": "token-user"},
        ),
        ("/api/v1/grants/{id}/", "delete"): Write({"id": _grant()}, {}),
        (f"{N}/subscriptions/", "post"): Write(
            {}, {"partition": "default", "queue_path": "root.team.a", "kinds": ["run.started"]}
        ),
        (f"{N}/subscriptions/{{id}}/", "put"): Write(
            {"id": _subscription()},
            {"partition": "default", "queue_path": "root.team", "kinds": ["run.failed"]},
        ),
        (f"{N}/subscriptions/{{id}}/", "delete"): Write({"id": _subscription()}, {}),
        (f"{N}/channels/", "post"): Write({}, {"name": "ops", "url": SLACK}),
        (f"{N}/channels/{{id}}/", "patch"): Write({"id": _channel()}, {"name": "ops2"}),
        (f"{N}/channels/{{id}}/", "delete"): Write({"id": _channel()}, {}),
        **{
            (f"{P}/change-requests/{{request_id}}/{action}/", "post"): Write(
                {**default, "request_id": _change_request()}, body
            )
            for action, body in (("approve", {}), ("reject", {"comment": "no"}), ("withdraw", {}))
        },
    }


def _subscription() -> int:
    """A subscription to change or delete (role-admin's, on root.team.a)."""
    found = Subscription.objects.first()
    if found is None:
        found = Subscription.objects.create(
            user=role_user("role-admin", "admin"), partition="default", queue_path="root.team.a",
            kinds=["run.started"], created_at=timezone.now(),
        )  # fmt: skip
    return found.pk


def _change_request() -> int:
    """A pending change request of root.team.b (made directly: the partition's approval
    setting, and so its version, stays as the other writes expect it)."""
    found = ChangeRequest.objects.filter(status="pending").first()
    if found is None:
        found = ChangeRequest.objects.create(
            partition=Partition.objects.get(name="default"), author_name="someone",
            created_at=timezone.now(), comment="lower b", queue_paths=["root.team.b"],
            edits={"queues": {"root.team.b": {"set": {"max": {"memory": 5 * GB}}}}},
        )  # fmt: skip
    return found.pk


def _channel() -> int:
    """A channel to rename or delete."""
    found = Channel.objects.first()
    if found is None:
        found = Channel.objects.create(name="chat", kind="slack", url=SLACK,
                                       created_at=timezone.now())  # fmt: skip
    return found.pk


def _grant() -> int:
    """A grant to revoke (token-user, operator of root.team.a)."""
    found = QueueGrant.objects.first()
    if found is None:
        found = give_grant(partition="default", queue_path="root.team.a", role="operator",
                           user="token-user", actor=None).grant  # fmt: skip
    return found.pk


def _scheduled_change() -> int:
    """A pending scheduled change to cancel (root.team.b's max, tomorrow)."""
    found = ScheduledChange.objects.filter(status="pending").first()
    if found is None:
        found = schedule_queue_change(
            "default", "root.team.b", version=_version("root.team.b"), actor=None,
            comment="later", apply_at=timezone.now() + timedelta(days=1), max={"memory": 5 * GB},
        )  # fmt: skip
    return found.pk


def with_unknown(write: Write) -> str:
    """The body with the unknown field added at the top level."""
    if write.content_type == "application/yaml":
        return write.body + f"{UNKNOWN}: 1\n"
    return json.dumps({**write.body, UNKNOWN: 1})


def everything() -> dict[str, Any]:
    """``snapshot`` of the malformed-input corpus, plus the runs' states (abort changes one)."""
    return {
        **snapshot(),
        "run_states": list(PreemptionRun.objects.order_by("pk").values_list("pk", "status")),
        "grants": list(QueueGrant.objects.order_by("pk").values_list("pk", "role")),
        "subscriptions": list(Subscription.objects.order_by("pk").values()),
        "channels": list(Channel.objects.order_by("pk").values()),
    }


def write_operations() -> list[tuple[str, str, bool]]:
    """(path, method, takes dry_run) of every write operation the server documents."""
    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method in {"post", "put", "patch", "delete"}:
                names = {parameter["name"] for parameter in operation.get("parameters", [])}
                found.append((path, method, "dry_run" in names))
    return found


def test_every_write_operation_refuses_an_unknown_field_and_changes_nothing(live):
    operations = write_operations()
    table = writes(live)
    assert {(path, method) for path, method, _ in operations} == set(table), (
        "every write operation of the schema needs a valid request in writes()"
    )
    assert sum(dry for *_, dry in operations) >= 3  # queue PATCH, config PUT and its YAML PUT
    failures = []
    for path, method, takes_dry_run in operations:
        write = table[(path, method)]
        client = APIClient() if "auth/token" in path else role_client("admin")
        url = path.format(**write.path)
        for query in ["", "?dry_run=true"] if takes_dry_run else [""]:
            before = everything()
            response = client.generic(
                method.upper(), url + query, with_unknown(write), content_type=write.content_type
            )
            label = f"{method.upper()} {url}{query}"
            if response.status_code != 400:
                failures.append(f"{label}: {response.status_code} {response.content[:300]!r}")
                continue
            errors = response.json()["errors"]
            if not errors or not all(UNKNOWN in key for key in errors):
                failures.append(f"{label}: errors name more than the unknown field: {errors}")
            elif not all("nknown" in message for key in errors for message in errors[key]):
                failures.append(f"{label}: not an unknown-field message: {errors}")
            if everything() != before:
                failures.append(f"{label}: the database changed")
    assert not failures, "\n".join(failures)


def test_the_issues_misspelt_max_is_400_and_its_dry_run_is_not_valid(live):
    """The request of issue 13: `maximum` for `max`."""
    operator = role_client("operator")
    url = f"{API}/queues/root.team.b/"
    body = {"maximum": {"memory": "5G"}, "version": _version("root.team.b"), "comment": "c"}
    revisions = ConfigRevision.objects.count()
    for query in ["", "?dry_run=true"]:
        response = operator.patch(url + query, body, format="json")
        assert assert_error(response, 400)["errors"] == {"maximum": ["Unknown field."]}
    assert ConfigRevision.objects.count() == revisions
    assert Queue.objects.get(path="root.team.b").max == {"memory": 10 * GB}


@pytest.mark.parametrize(
    ("url", "mutate", "at"),
    [
        (f"{API}/config", lambda body: body["queues"][1].update(maxx={}), "queues[1].maxx"),
        (f"{API}/config", lambda body: body["partition"].update(bogus=1), "partition.bogus"),
        (f"{API}/config/validate", lambda body: body["queues"][2].update(x=1), "queues[2].x"),
    ],
)
def test_unknown_fields_inside_a_config_are_named_with_their_path(live, url, mutate, at):
    admin = role_client("admin")
    body = {**_config(), "comment": "c"}
    mutate(body)
    before = everything()
    method = "PUT" if url.endswith("config") else "POST"
    response = admin.generic(method, url, json.dumps(body), content_type="application/json")
    assert assert_error(response, 400)["errors"] == {at: ["Unknown field."]}
    assert everything() == before


def test_unknown_keys_in_kept_yunikorn_keys_are_named_with_their_path(live):
    """``extra`` holds YuniKorn's own keys, checked by YuniKorn's rules (unknown keys refused)."""
    body = {**_config(), "comment": "c"}
    body["queues"][1]["extra"] = {"adminacl": "ops", "maxapps": 3}
    response = role_client("admin").put(f"{API}/config", body, format="json")
    errors = assert_error(response, 400)["errors"]
    assert any("maxapps" in key for key in errors), errors


def test_unknown_keys_in_a_yaml_config_are_named_with_their_path(live):
    text = team_config("2s").replace("name: team\n", "name: team\n            maxx: 1\n")
    assert yaml.safe_load(text)  # still YAML
    response = role_client("admin").put(
        f"{API}/config.yaml?version=1&comment=c", text, content_type="application/yaml"
    )
    errors = assert_error(response, 400)["errors"]
    assert any(key.endswith("maxx") for key in errors), errors


def test_unknown_fields_of_nested_state_are_named_with_their_path(live):
    admin = role_client("admin")
    before = everything()
    allocation = {**TEAM_TASKS[0], "colour": "red"}
    pushed = admin.post(f"{API}/cluster-state", {"allocations": [allocation]}, format="json")
    assert "allocations[0].colour" in assert_error(pushed, 400)["errors"]
    simulated = admin.post(
        f"{API}/simulate",
        {"policy": "quota", "queue": "root.team", "max": {"memory": "50G"},
         "state": {"nodes": [{"name": "n9", "size": 1}]}},
        format="json",
    )  # fmt: skip
    assert "state.nodes[0].size" in assert_error(simulated, 400)["errors"]
    assert everything() == before


def test_a_form_body_with_an_unknown_field_is_refused_too(live):
    admin = role_client("admin")
    before = everything()
    response = admin.generic(
        "POST", f"{API}/revisions/1/revert", "comment=undo&reason=x",
        content_type="application/x-www-form-urlencoded",
    )  # fmt: skip
    assert assert_error(response, 400)["errors"] == {"reason": ["Unknown field."]}
    assert everything() == before


def test_an_unknown_field_is_reported_with_the_other_field_errors(live):
    body = {"max": {"memory": "-1G"}, "maximum": {}, "version": _version("root.team.b")}
    response = role_client("operator").patch(f"{API}/queues/root.team.b/", body, format="json")
    errors = assert_error(response, 400)["errors"]
    assert set(errors) == {"max.memory", "maximum", "comment"}


def test_what_a_config_get_returns_can_be_put_back(live):
    """The read-only facts of a GET (``yunikorn_min_version``, warnings) are accepted back and
    ignored; ``path`` and the partition's ``name`` must agree with what places the queue."""
    admin = role_client("admin")
    body = {**_config(), "comment": "same again"}
    assert {"yunikorn_min_version", "warnings", "version"} <= set(body)
    assert admin.post(f"{API}/config/validate", body, format="json").status_code == 200
    body["queues"][1]["path"] = "root.elsewhere"
    errors = assert_error(admin.put(f"{API}/config", body, format="json"), 400)["errors"]
    assert list(errors) == ["queues[1].path"]
    body = {**_config(), "comment": "c"}
    body["partition"]["name"] = "other"
    errors = assert_error(admin.put(f"{API}/config", body, format="json"), 400)["errors"]
    assert list(errors) == ["partition.name"]
