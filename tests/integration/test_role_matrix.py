"""The role matrix (issue 16, acceptance): every caller kind x every write of the API and every
form of the console, inside and outside a queue grant's subtree, answers exactly the status
expected, and a refusal changes nothing.

Callers (``tests/support/tenants.py``): the global viewer, operator and admin; a subtree
operator (a grant to the user on root.team-a) and a subtree admin (a grant to their group on
root.team-a); anonymous. "inside" targets a queue (or its timer or run) under root.team-a,
"outside" one under root.team-b; a write about the whole partition or the cluster has one place
("whole").

Completeness: the API's write operations are read from the served OpenAPI schema and the
console's routes from the URL patterns (as ``test_unknown_fields`` and ``test_web_every_page``
walk them); a new endpoint or page fails ``test_the_matrix_covers_every_*`` until it is given
its row here.

The expected statuses come from the table below, written out by hand from the table of
docs/reference/roles-and-permissions.md, not from ``permissions.RULES``: the test would not
notice a wrong rule it copied.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_django
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.accounts.roles import ROLES
from scheduler_admin.accounts.services import issue_token
from scheduler_admin.accounts.tokens import ApiToken
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.cluster.models import Node
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, QuotaTimer
from scheduler_admin.notifications.models import Channel, Subscription
from scheduler_admin.queues.models import (
    ChangeRequest,
    ConfigRevision,
    Partition,
    Queue,
    ScheduledChange,
)
from scheduler_admin.queues.scheduled import schedule_queue_change
from scheduler_admin.web.common import queue_url
from scheduler_admin.web.partition_settings.forms import PartitionSettingsForm
from tests.integration.test_web_queue_page import edit_body
from tests.support.tenants import (
    CALLERS,
    TENANTS_CONFIG,
    Tenants,
    tenant_state,
    tenant_user,
)
from tests.support.throttles import clear_throttle_counts

pytestmark = pytest.mark.django_db

P = "/api/v1/partitions/{partition}"
API = "/api/v1/partitions/default"
N = "/api/v1/notifications"
SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#ops"
PLACES = {"inside": ("root.team-a", "web", "batch"), "outside": ("root.team-b", "web", "batch")}

# Who may: a global role (anywhere), or a subtree role @ the place it may act.
READ_QUEUE = {"viewer", "operator", "admin", "sub_operator@inside", "sub_admin@inside"}
OPERATE_QUEUE = {"operator", "admin", "sub_operator@inside", "sub_admin@inside"}
ADMIN_QUEUE = {"admin", "sub_admin@inside"}
READ_WHOLE = {"viewer", "operator", "admin"}
OPERATE_WHOLE = {"operator", "admin"}
ADMIN_WHOLE = {"admin"}
SIGNED_IN = {"viewer", "operator", "admin", "sub_operator@whole", "sub_admin@whole"}


@dataclass(frozen=True)
class Call:
    """One request: method, URL, body (JSON unless ``content_type`` says otherwise)."""

    method: str
    url: str
    body: Any = None
    content_type: str = "application/json"


@dataclass(frozen=True)
class Write:
    """A write and who may make it: ``allowed`` (the sets above), the status when allowed,
    ``places`` it is tried at, and how to build the request for a place."""

    allowed: set[str]
    success: int
    places: tuple[str, ...]
    call: Callable[[Tenants, str], Call]


QUEUED = ("inside", "outside")
WHOLE = ("whole",)


def queue_path(place: str, leaf: str = "") -> str:
    top = PLACES[place][0] if place in PLACES else "root.team-a"
    return f"{top}.{leaf}" if leaf else top


def _version(path: str) -> int:
    return Queue.objects.get(path=path).version


def _config_body() -> dict[str, Any]:
    client = APIClient()
    client.force_authenticate(tenant_user("admin"))
    return client.get(f"{API}/config").json()


# ---- the API ------------------------------------------------------------------------------
API_WRITES: dict[tuple[str, str], Write | None] = {
    # Exchanging a password for a token needs no role (``AllowAny``): not part of the matrix.
    ("/api/v1/auth/token/", "post"): None,
    (f"{P}/", "patch"): Write(
        ADMIN_WHOLE, 200, WHOLE,
        lambda t, p: Call("PATCH", f"{API}/", {
            "miss_percent": 5, "version": Partition.objects.get().version, "comment": "c"}),
    ),
    (f"{P}/queues/", "post"): Write(
        ADMIN_QUEUE, 201, QUEUED,
        lambda t, p: Call("POST", f"{API}/queues/", {
            "parent": queue_path(p), "name": "new", "comment": "new"}),
    ),
    (f"{P}/queues/{{path}}/", "patch"): Write(
        OPERATE_QUEUE, 200, QUEUED,
        lambda t, p: Call("PATCH", f"{API}/queues/{queue_path(p, 'web')}/", {
            "max": {"memory": "300G"}, "version": _version(queue_path(p, "web")),
            "comment": "raise"}),
    ),
    (f"{P}/queues/{{path}}/", "delete"): Write(
        ADMIN_QUEUE, 204, QUEUED,
        lambda t, p: Call("DELETE", f"{API}/queues/{queue_path(p, 'batch')}/", {
            "version": _version(queue_path(p, "batch")), "comment": "gone"}),
    ),
    (f"{P}/config", "put"): Write(
        ADMIN_WHOLE, 200, WHOLE,
        lambda t, p: Call("PUT", f"{API}/config", {**_config_body(), "comment": "put"}),
    ),
    (f"{P}/config.yaml", "put"): Write(
        ADMIN_WHOLE, 200, WHOLE,
        lambda t, p: Call(
            "PUT",
            f"{API}/config.yaml?version={Partition.objects.get().version}&comment=yaml",
            TENANTS_CONFIG.replace("memory: 400G", "memory: 300G", 1),
            "application/yaml",
        ),
    ),
    (f"{P}/config/validate", "post"): Write(
        READ_WHOLE, 200, WHOLE, lambda t, p: Call("POST", f"{API}/config/validate", _config_body())
    ),
    (f"{P}/revisions/{{number}}/revert", "post"): Write(
        ADMIN_WHOLE, 201, WHOLE,
        lambda t, p: Call(
            "POST", f"{API}/revisions/1/revert",
            {"comment": "undo", "version": Partition.objects.get(name="default").version},
        ),
    ),
    (f"{P}/simulate", "post"): Write(
        READ_QUEUE, 200, QUEUED,
        lambda t, p: Call("POST", f"{API}/simulate", {
            "policy": "quota", "queue": queue_path(p, "web"), "max": {"memory": "10G"}}),
    ),
    (f"{P}/cluster-state", "post"): Write(
        OPERATE_WHOLE, 200, WHOLE,
        lambda t, p: Call("POST", f"{API}/cluster-state", {
            "nodes": [{"name": "n2", "capacity": {"memory": "10G"}}]}),
    ),
    (f"{P}/timers/{{id}}/cancel", "post"): Write(
        OPERATE_QUEUE, 200, QUEUED,
        lambda t, p: Call("POST", f"{API}/timers/{t.timer(p).pk}/cancel", {}),
    ),
    (f"{P}/evictions/{{id}}/ack", "post"): Write(
        OPERATE_WHOLE, 200, WHOLE,
        lambda t, p: Call("POST", f"{API}/evictions/{t.order.pk}/ack", {}),
    ),
    (f"{P}/evictions/acknowledge", "post"): Write(
        OPERATE_WHOLE, 200, WHOLE,
        lambda t, p: Call("POST", f"{API}/evictions/acknowledge", {
            "orders": [{"id": t.order.pk, "outcome": "evicted"}]}),
    ),
    (f"{P}/evictions/report", "post"): Write(
        OPERATE_WHOLE, 200, WHOLE,
        lambda t, p: Call("POST", f"{API}/evictions/report", {
            "orders": [{"id": t.order.pk, "status": "blocked", "code": 429}]}),
    ),
    (f"{P}/agents/heartbeat", "post"): Write(
        OPERATE_WHOLE, 200, WHOLE,
        lambda t, p: Call("POST", f"{API}/agents/heartbeat", {
            "name": "agent-1", "started_at": "2026-03-01T12:00:00Z"}),
    ),
    # Cancelling another's scheduled change (the author may always cancel their own:
    # tests/api/test_scheduled_changes.py); the change here is the system's.
    (f"{P}/scheduled-changes/{{id}}/cancel", "post"): Write(
        ADMIN_QUEUE, 200, QUEUED,
        lambda t, p: Call("POST", f"{API}/scheduled-changes/{_scheduled(p)}/cancel", {}),
    ),
    ("/api/v1/runs/{id}/abort", "post"): Write(
        ADMIN_QUEUE, 200, QUEUED,
        lambda t, p: Call("POST", f"/api/v1/runs/{t.run(p).pk}/abort", {"comment": "stop"}),
    ),
    ("/api/v1/grants/", "post"): Write(
        ADMIN_WHOLE, 201, WHOLE,
        lambda t, p: Call("POST", "/api/v1/grants/", {
            "partition": "default", "queue": "root.team-a.web", "role": "operator",
            "user": "target"}),
    ),
    ("/api/v1/grants/{id}/", "delete"): Write(
        ADMIN_WHOLE, 204, WHOLE,
        lambda t, p: Call("DELETE", f"/api/v1/grants/{_target_grant()}/", {}),
    ),
    # Notifications: anyone who reads a queue subscribes to it; channels are for admins.
    (f"{N}/subscriptions/", "post"): Write(
        READ_QUEUE, 201, QUEUED,
        lambda t, p: Call("POST", f"{N}/subscriptions/", {
            "partition": "default", "queue_path": queue_path(p), "kinds": ["run.started"]}),
    ),
    # One's own subscription (another's is a 404): tests/api/test_notifications_api.py.
    (f"{N}/subscriptions/{{id}}/", "put"): None,
    (f"{N}/subscriptions/{{id}}/", "delete"): None,
    (f"{N}/channels/", "post"): Write(
        ADMIN_WHOLE, 201, WHOLE,
        lambda t, p: Call("POST", f"{N}/channels/", {"name": "ops", "url": SLACK}),
    ),
    (f"{N}/channels/{{id}}/", "patch"): Write(
        ADMIN_WHOLE, 200, WHOLE,
        lambda t, p: Call("PATCH", f"{N}/channels/{_channel()}/", {"name": "ops-2"}),
    ),
    (f"{N}/channels/{{id}}/", "delete"): Write(
        ADMIN_WHOLE, 204, WHOLE,
        lambda t, p: Call("DELETE", f"{N}/channels/{_channel()}/", {}),
    ),
    (f"{P}/change-requests/{{request_id}}/approve/", "post"): Write(
        ADMIN_QUEUE, 200, QUEUED,
        lambda t, p: Call("POST", f"{API}/change-requests/{_change_request(p)}/approve/", {}),
    ),
    (f"{P}/change-requests/{{request_id}}/reject/", "post"): Write(
        ADMIN_QUEUE, 200, QUEUED,
        lambda t, p: Call("POST", f"{API}/change-requests/{_change_request(p)}/reject/",
                          {"comment": "no"}),
    ),
    # Withdrawing is for the request's author alone, whatever their role or grants
    # (tests/api/test_change_requests_api.py): not a row of role x place.
    (f"{P}/change-requests/{{request_id}}/withdraw/", "post"): None,
}  # fmt: skip


def _scheduled(place: str) -> int:
    """A pending scheduled change of the place's ``web`` queue, made by the system."""
    path = queue_path(place, "web")
    found = ScheduledChange.objects.filter(queue_path=path, status="pending").first()
    if found is None:
        found = schedule_queue_change(
            "default", path, version=_version(path), actor=None, comment="later",
            apply_at=timezone.now() + timedelta(days=1), max={"memory": 300 * 10**9},
        )  # fmt: skip
    return found.pk


def _channel() -> int:
    found = Channel.objects.first() or Channel.objects.create(
        name="chat", kind="slack", url=SLACK, created_at=timezone.now()
    )
    return found.pk


def _change_request(place: str) -> int:
    """A pending request by someone else to raise the memory max of the place's web queue
    (made directly: the partition's approval setting stays as the other rows expect it)."""
    path = queue_path(place, "web")
    partition = Partition.objects.get(name="default")
    return ChangeRequest.objects.create(
        partition=partition, author_name="someone", created_at=timezone.now(),
        comment="raise", queue_paths=[path],
        base_revision=partition.revisions.order_by("-number").values_list("number", flat=True)[0],
        edits={"queues": {path: {"set": {"max": {"memory": 300 * 10**9}}}}},
    ).pk  # fmt: skip


def _target_token() -> int:
    return ApiToken.objects.get(user__username="target", name="target").pk


def _target_grant() -> int:
    return QueueGrant.objects.get(user__username="target").pk


def api_cases() -> list[tuple[str, str, str, str]]:
    return [
        (path, method, caller, place)
        for (path, method), write in API_WRITES.items()
        if write is not None
        for caller in CALLERS
        for place in write.places
    ]


def expected(allowed: set[str], caller: str, place: str, success: int, anonymous: int) -> int:
    if caller == "anonymous":
        return anonymous
    return success if caller in allowed or f"{caller}@{place}" in allowed else 403


def snapshot() -> dict[str, Any]:
    """Everything a write of the matrix could change."""
    return {
        "partitions": list(Partition.objects.values_list("name", "version", "miss_percent")),
        "queues": sorted(
            Queue.objects.values_list("path", "version", "max", "guaranteed", "properties")
        ),
        "revisions": ConfigRevision.objects.count(),
        "timers": sorted(QuotaTimer.objects.values_list("pk", "status")),
        "runs": sorted(PreemptionRun.objects.values_list("pk", "status")),
        "orders": sorted(EvictionOrder.objects.values_list("pk", "status", "cluster_attempts")),
        "agents": ClusterAgent.objects.count(),
        "nodes": sorted(Node.objects.values_list("name", flat=True)),
        "grants": sorted(QueueGrant.objects.values_list("pk", "role")),
        "users": sorted(get_user_model().objects.values_list("username", "is_active")),
        "memberships": sorted(Group.objects.values_list("name", "user__username")),
        "tokens": sorted(ApiToken.objects.values_list("user__username", "name")),
        "subscriptions": Subscription.objects.count(),
        "channels": sorted(Channel.objects.values_list("name", flat=True)),
        "audit": AuditEvent.objects.count(),
        "scheduled": sorted(ScheduledChange.objects.values_list("pk", "status")),
    }


@pytest.fixture(scope="module")
def committed_tenants(
    django_db_setup: None, django_db_blocker: pytest_django.DjangoDbBlocker
) -> Iterator[Tenants]:
    """The tenants' partition, every caller, and a ``target`` account (viewer, with an
    operator grant on root.team-b) for the writes about users and grants: committed once for
    the whole module, like Django's ``setUpTestData``.

    Every test still runs in a transaction of its own that is rolled back, so each starts from
    exactly this state; building it took most of each of the module's 345 tests. The module is
    an xdist group of its own (``tests/conftest.py``), so no transactional test on the same
    worker empties the tables in between; at the end every table is emptied and the role groups
    put back, as after a transactional test."""
    with django_db_blocker.unblock():
        clear_throttle_counts()
        state = tenant_state()
        for caller in CALLERS:
            tenant_user(caller)
        target = get_user_model().objects.create_user("target", password="pw-target-1234")
        target.groups.add(Group.objects.get(name="viewer"))
        give_grant(partition="default", queue_path="root.team-b", role="operator",
                   user="target", actor=None)  # fmt: skip
        issue_token(target, actor=None, name="target")
    try:
        yield state
    finally:
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)
            for name in ROLES:
                Group.objects.get_or_create(name=name)


@pytest.fixture
def tenants(committed_tenants: Tenants) -> Tenants:
    """The committed state, read again: a test that changes a row object in place never
    hands the change to the next test."""
    clear_throttle_counts()  # the write throttle's counters of earlier tests
    state = committed_tenants
    return Tenants(
        partition=Partition.objects.get(pk=state.partition.pk),
        timer_in=QuotaTimer.objects.get(pk=state.timer_in.pk),
        timer_out=QuotaTimer.objects.get(pk=state.timer_out.pk),
        run_in=PreemptionRun.objects.get(pk=state.run_in.pk),
        run_out=PreemptionRun.objects.get(pk=state.run_out.pk),
        order=EvictionOrder.objects.get(pk=state.order.pk),
    )


def api_client(caller: str) -> APIClient:
    client = APIClient()
    user = tenant_user(caller)
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(user, actor=None)}")
    return client


def _refusal_checks(response: Any, caller: str, place: str) -> list[str]:
    """A subtree holder's 403 says why, naming their own subtree, never the other tenant's
    queue unless they named it themselves."""
    problems = []
    if caller in ("sub_operator", "sub_admin"):
        text = response.content.decode(errors="replace")
        if "root.team-a" not in text:
            problems.append(f"the reason does not name the caller's subtree: {text[:300]}")
    return problems


@pytest.mark.parametrize(("path", "method", "caller", "place"), api_cases())
def test_api_write(tenants, path, method, caller, place):
    write = API_WRITES[(path, method)]
    assert write is not None
    call = write.call(tenants, place)
    want = expected(write.allowed, caller, place, write.success, anonymous=401)
    client = api_client(caller)  # its token exists before the snapshot
    before = snapshot()
    body = call.body if call.content_type != "application/json" else json.dumps(call.body)
    response = client.generic(call.method, call.url, body, content_type=call.content_type)
    assert response.status_code == want, f"{call.method} {call.url}: {response.content[:400]!r}"
    if want in (401, 403):
        assert snapshot() == before, "a refused write changed something"
        assert response.json()["detail"], "a refusal says why"
        assert not _refusal_checks(response, caller, place)


def test_the_matrix_covers_every_write_operation_of_the_api(tenants):
    client = APIClient()
    client.force_authenticate(tenant_user("viewer"))
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operations = {
        (path, method)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"post", "put", "patch", "delete"}
    }
    assert operations == set(API_WRITES), "give every write operation its row in API_WRITES"


def test_a_subtree_holder_may_not_delete_the_queue_they_were_granted(tenants):
    client = api_client("sub_admin")
    before = snapshot()
    response = client.delete(
        f"{API}/queues/root.team-a/",
        {"version": _version("root.team-a"), "comment": "mine?"},
        format="json",
    )
    assert response.status_code == 403
    assert "root.team-a is the queue you were granted" in response.json()["detail"]
    assert snapshot() == before


# ---- the console --------------------------------------------------------------------------
@dataclass(frozen=True)
class Form:
    """A console form (or the page that is part of its action, like a confirmation)."""

    allowed: set[str]
    success: int
    places: tuple[str, ...]
    call: Callable[[Tenants, str], Call]


def _form(method: str, url: str, data: dict[str, Any] | None = None) -> Call:
    return Call(method, url, data or {}, "multipart/form-data")


def _queue_post(place: str, action: str) -> Call:
    path = queue_path(place, "web")
    body = edit_body(Queue.objects.get(path=path), action=action, **{"res-0-max": "300G"})
    return _form("POST", queue_url("default", path), body)


def _simulation(place: str) -> str:
    return "/simulator/?" + urlencode({
        "partition": "default", "policy": "quota", "queue": queue_path(place, "web"),
        "max-TOTAL_FORMS": "1", "max-INITIAL_FORMS": "0", "max-0-name": "memory",
        "max-0-max": "10G",
    })  # fmt: skip


def _settings_body() -> dict[str, Any]:
    """The partition settings form as saved, with a higher miss tolerance."""
    partition = Partition.objects.get(name="default")
    body = PartitionSettingsForm.initial_for(partition.settings_config(), partition.version)
    body = {key: value for key, value in body.items() if value is not False}  # unticked boxes
    return {**body, "miss_percent": 7, "comment": "more tolerance"}


def _target_pk() -> int:
    return get_user_model().objects.get(username="target").pk


CONSOLE_FORMS: dict[str, list[Form]] = {
    "queue-detail": [
        Form(OPERATE_QUEUE, 200, QUEUED, lambda t, p: _queue_post(p, "preview")),
        Form(OPERATE_QUEUE, 302, QUEUED, lambda t, p: _queue_post(p, "save")),
    ],
    "timer-cancel": [
        Form(OPERATE_QUEUE, 200, QUEUED,
             lambda t, p: _form("GET", f"/timers/{t.timer(p).pk}/cancel/")),
        Form(OPERATE_QUEUE, 302, QUEUED,
             lambda t, p: _form("POST", f"/timers/{t.timer(p).pk}/cancel/", {"comment": "x"})),
    ],
    "scheduled-cancel": [
        Form(ADMIN_QUEUE, 302, QUEUED, lambda t, p: _form(
            "POST", f"/partitions/default/scheduled/{_scheduled(p)}/cancel")),
    ],
    "run-abort": [
        Form(ADMIN_QUEUE, 302, QUEUED,
             lambda t, p: _form("POST", f"/runs/{t.run(p).pk}/abort/", {"comment": "stop"})),
    ],
    "simulator": [Form(READ_QUEUE, 200, QUEUED, lambda t, p: _form("GET", _simulation(p)))],
    "history-revert": [
        Form(ADMIN_WHOLE, 200, WHOLE, lambda t, p: _form("GET", "/history/default/1/revert/")),
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form("POST", "/history/default/1/revert/", {
            "comment": "undo", "version": Partition.objects.get().version})),
    ],
    "history-import": [
        Form(ADMIN_WHOLE, 200, WHOLE, lambda t, p: _form("POST", "/history/import/", {
            "text": TENANTS_CONFIG.replace("memory: 400G", "memory: 300G", 1),
            "comment": "import", "action": "preview"})),
    ],
    "partition-settings": [
        Form(SIGNED_IN, 200, WHOLE, lambda t, p: _form("GET", "/partitions/default/settings/")),
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form(
            "POST", "/partitions/default/settings/", _settings_body())),
    ],
    "users": [Form(ADMIN_WHOLE, 200, WHOLE, lambda t, p: _form("GET", "/users/"))],
    "users-create": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form("POST", "/users/create/", {
            "username": "newbie", "role": "viewer", "email": "",
            "password": "pw-newbie-123456"})),
    ],
    "users-role": [
        Form(ADMIN_WHOLE, 302, WHOLE,
             lambda t, p: _form("POST", f"/users/{_target_pk()}/role/", {"role": "operator"})),
    ],
    "users-deactivate": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form(
            "POST", f"/users/{_target_pk()}/deactivate/", {"confirmed": "yes"})),
    ],
    "users-reactivate": [
        Form(ADMIN_WHOLE, 302, WHOLE,
             lambda t, p: _form("POST", f"/users/{_target_pk()}/reactivate/")),
    ],
    "users-tokens": [
        Form(ADMIN_WHOLE, 200, WHOLE, lambda t, p: _form("GET", f"/users/{_target_pk()}/tokens/")),
    ],
    "users-tokens-issue": [
        Form(ADMIN_WHOLE, 200, WHOLE, lambda t, p: _form(
            "POST", f"/users/{_target_pk()}/tokens/issue/", {"name": "ci", "expires_days": 7})),
    ],
    "users-tokens-revoke": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form(
            "POST", f"/users/{_target_pk()}/tokens/{_target_token()}/revoke/",
            {"confirmed": "yes"})),
    ],
    "users-unlock": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form("POST", "/users/unlock/",
                                                          {"user": "target"})),
    ],
    "users-password": [
        Form(ADMIN_WHOLE, 200, WHOLE, lambda t, p: _form(
            "POST", f"/users/{_target_pk()}/password/", {"confirmed": "yes"})),
    ],
    # Every signed-in account changes its own password (the form; posting it needs the current
    # password: tests/integration/test_passwords.py).
    "my-password": [Form(SIGNED_IN, 200, WHOLE, lambda t, p: _form("GET", "/account/password/"))],
    # Every signed-in account manages its own tokens, whatever its role.
    "my-tokens": [Form(SIGNED_IN, 200, WHOLE, lambda t, p: _form("GET", "/account/tokens/"))],
    "my-tokens-issue": [
        Form(SIGNED_IN, 200, WHOLE, lambda t, p: _form(
            "POST", "/account/tokens/issue/", {"name": "laptop", "expires_days": 7})),
    ],
    # Every signed-in account subscribes to the queues it reads.
    "notifications": [Form(SIGNED_IN, 200, WHOLE,
                           lambda t, p: _form("GET", "/account/notifications/"))],
    "notifications-subscribe": [
        Form(READ_QUEUE, 302, QUEUED, lambda t, p: _form(
            "POST", "/account/notifications/subscribe/", {
                "partition": "default", "queue_path": queue_path(p), "subtree": "on",
                "kinds": ["run.started"], "email": "on"})),
    ],
    # Every signed-in account sets its own e-mail address (where its subscriptions go).
    "notifications-email": [
        Form(SIGNED_IN, 302, WHOLE, lambda t, p: _form(
            "POST", "/account/notifications/email/", {"email": "me@example.org"})),
    ],
    "users-grant-give": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form("POST", "/users/grants/", {
            "partition": "default", "queue": "root.team-a.web", "role": "admin",
            "user": "target", "group": ""})),
    ],
    "users-grant-revoke": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form(
            "POST", f"/users/grants/{_target_grant()}/revoke/", {"confirmed": "yes"})),
    ],
    "change-request": [
        Form(READ_QUEUE, 200, QUEUED,
             lambda t, p: _form("GET", f"/partitions/default/change-requests/"
                                       f"{_change_request(p)}/")),
        Form(ADMIN_QUEUE, 302, QUEUED, lambda t, p: _form(
            "POST", f"/partitions/default/change-requests/{_change_request(p)}/",
            {"action": "approve", "confirm_evictions": "on"})),
    ],
    "users-groups": [
        Form(ADMIN_WHOLE, 302, WHOLE, lambda t, p: _form(
            "POST", "/users/groups/", {"user": _target_pk(), "groups": "team-b"})),
    ],
}  # fmt: skip

#: Console routes that only read, with where what they show to whom is tested.
CONSOLE_READS = {
    "healthz": "open to everyone (liveness)",
    "dashboard": "test_grant_visibility: the tree starts at the holder's queues",
    "dashboard-children": "test_grant_visibility: 403 outside",
    "fences": "test_grant_visibility: whole partition, global roles",
    "history": "test_grant_visibility: whole partition, global roles",
    "history-diff": "test_grant_visibility: whole partition, global roles",
    "history-revision": "test_grant_visibility: whole partition, global roles",
    "run-list": "test_grant_visibility: narrowed to the holder's runs",
    "run-detail": "test_grant_visibility: 403 outside",
    "audit-list": "test_grant_visibility: narrowed to the holder's queues",
    "audit-verify-record": "test_task_history: global roles only, 403 for a holder",
    "find": "test_task_history: the holder's queues only",
    "task-history": "test_task_history: 404 outside, as for an unknown task",
    "application-history": "test_task_history: 404 outside, as for an unknown application",
    "glossary": "no data of any queue",
    "change-requests": "test_web_change_requests: narrowed to requests inside the holder's queues",
    "docs": "the built help site, no data of any queue (test_help_links: sign-in required)",
    "docs-page": "the built help site, no data of any queue (test_help_links: sign-in required)",
    "live-dashboard": "test_grant_visibility: narrowed like the dashboard",
    "live-queue": "test_grant_visibility: 403 outside",
    # Revokes one of the caller's own tokens (its id is the caller's, so not a matrix call).
    "my-tokens-revoke": "test_api_tokens: the owner revokes; another account's token is a 404",
    "notifications-unsubscribe": "test_notifications_page: the owner deletes; another's is a 404",
}


def console_cases() -> list[tuple[str, int, str, str]]:
    return [
        (name, index, caller, place)
        for name, forms in CONSOLE_FORMS.items()
        for index, form in enumerate(forms)
        for caller in CALLERS
        for place in form.places
    ]


def console_client(caller: str) -> Client:
    client = Client()
    user = tenant_user(caller)
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize(("name", "index", "caller", "place"), console_cases())
def test_console_form(tenants, name, index, caller, place):
    form = CONSOLE_FORMS[name][index]
    call = form.call(tenants, place)
    want = expected(form.allowed, caller, place, form.success, anonymous=302)
    client = console_client(caller)
    before = snapshot()
    send = client.get if call.method == "GET" else client.post
    response = send(call.url, call.body)
    where = f"{call.method} {call.url}"
    assert response.status_code == want, f"{where}: {response.content[:600]!r}"
    if caller == "anonymous":
        assert response["Location"].startswith("/accounts/login/?next="), where
    elif want == 302:
        assert not response["Location"].startswith("/accounts/login/"), where
    if want == 403 or caller == "anonymous":
        assert snapshot() == before, f"{where}: a refused form changed something"
    if want == 403:
        page = response.content.decode()
        assert "Nothing was changed." in page
        assert not _refusal_checks(response, caller, place), where


def _route_names(patterns: list[Any], prefix: str = "") -> set[str]:
    names: set[str] = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            names |= _route_names(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(pattern.name)
    return names


def test_the_matrix_covers_every_console_route():
    """Every named route of the console (``scheduler_admin.web.urls``) is a form of the matrix
    or a read listed with the test that covers it."""
    console = next(
        p
        for p in get_resolver().url_patterns
        if isinstance(p, URLResolver)
        and getattr(p.urlconf_name, "__name__", "") == "scheduler_admin.web.urls"
    )
    names = _route_names(console.url_patterns)
    assert names == set(CONSOLE_FORMS) | set(CONSOLE_READS)
    assert not set(CONSOLE_FORMS) & set(CONSOLE_READS)
