"""DRF's browsable API: for signed-in users in every profile, with the console's roles and CSRF.

A signed-in browser gets HTML pages for every endpoint (no 500, no traceback, assets served
locally, in production too once collected); a viewer browses but sees no write form and cannot
write through one; a write from the page needs the CSRF token; anonymous visitors get nothing
(a redirect to sign in, or the JSON 401), and token clients keep getting JSON.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.parse
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.utils import get_random_secret_key
from django.test import Client
from django.utils import timezone

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.cluster.models import DynamicQueue
from scheduler_admin.notifications.models import Channel, Subscription
from scheduler_admin.queues.models import ChangeRequest, ConfigRevision, Partition, Queue
from scheduler_admin.queues.scheduled import schedule_queue_change
from tests.api.conftest import Live, role_client
from tests.integration.test_compose_stack import settings_variables
from tests.support.console import signed_in_client

pytestmark = pytest.mark.django_db

PAGE = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # a browser's Accept
API = "/api/v1/partitions/default"
QUEUE = f"{API}/queues/root.team.b/"
PROJECT_DIR = Path(settings.BASE_DIR)
#: Endpoints whose path chooses the format (DRF's token view answers JSON only).
OWN_FORMAT = ("export.csv", "export.json", "export.pdf", "config.yaml", "auth/token/")
TRACEBACK = "Traceback (most recent call last)"
#: Endpoints only admins read (a channel's name and kind: its URL is a secret anyway).
ADMIN_ONLY = ("/api/v1/notifications/channels/",)


def every_url(live: Live, grant_holder: str) -> dict[str, str]:
    """A concrete URL for every path of the served schema, keyed by the path: the objects of
    ``live`` (the specific segments are replaced first, then the generic ones), and a queue
    grant held by ``grant_holder`` (so its holder reads it, as an admin does)."""
    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    audit_id = AuditEvent.objects.order_by("id").values_list("id", flat=True)[0]
    grant = give_grant(partition="default", queue_path="root.team.a", role="operator",
                       user=grant_holder, actor=None).grant  # fmt: skip
    holder = get_user_model().objects.get(username=grant_holder)
    subscription = Subscription.objects.create(
        user=holder, partition="default", queue_path="root.team.a", kinds=["run.started"],
        created_at=timezone.now(),
    )  # fmt: skip
    channel = Channel.objects.create(name="chat", kind="json", url="jsons://hooks.example.com/x",
                                     created_at=timezone.now())  # fmt: skip
    partition = Partition.objects.get(name="default")
    scheduled = schedule_queue_change(
        "default", "root.team.b",
        version=Queue.objects.get(partition=partition, path="root.team.b").version,
        actor=None, comment="later", apply_at=timezone.now() + timedelta(days=1),
        max={"memory": 5 * 10**9},
    )  # fmt: skip
    change_request = ChangeRequest.objects.create(
        partition=partition, author_name="someone", created_at=timezone.now(),
        comment="lower b", queue_paths=["root.team.b"],
        edits={"queues": {"root.team.b": {"set": {"max": {"memory": 5 * 10**9}}}}},
    )  # fmt: skip
    DynamicQueue.objects.create(partition=partition, path="root.team.b.dynamic", leaf=True)
    segments = {
        "/dynamic-queues/{path}": "/dynamic-queues/root.team.b.dynamic",
        "/scheduled-changes/{id}": f"/scheduled-changes/{scheduled.pk}",
        "/change-requests/{request_id}": f"/change-requests/{change_request.pk}",
        "/grants/{id}": f"/grants/{grant.pk}",
        "/subscriptions/{id}": f"/subscriptions/{subscription.pk}",
        "/channels/{id}": f"/channels/{channel.pk}",
        "/runs/{id}": f"/runs/{live.active_run.pk}",
        "/timers/{id}": f"/timers/{live.timer.pk}",
        "/evictions/{id}": f"/evictions/{live.order.pk}",
        "/audit/{id}": f"/audit/{audit_id}",
        "/budgets/{name}": "/budgets/pdb1",
        "/asks/{external_id}": "/asks/ask1",
        "{partition}": "default",
        "{path}": "root.team.b",
        "{number}": "1",
        "{name}": "n1",
        "{external_id}": "a1",
    }
    urls = {}
    for path in schema["paths"]:
        url = path
        for segment, value in segments.items():
            url = url.replace(segment, value)
        assert "{" not in url, f"no object for a parameter of {path}"
        urls[path] = url
    return urls


def _gets(schema_paths: dict[str, str]) -> dict[str, str]:
    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    return {path: url for path, url in schema_paths.items() if "get" in schema["paths"][path]}


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_every_endpoint_renders_as_a_page_for_a_signed_in_user(live, role):
    """Every GET endpoint answers 200 with HTML; write-only ones answer their 405 as a page;
    never a 500 or a traceback (the page's forms are built from each view's serializers)."""
    client = signed_in_client(role)
    urls = every_url(live, grant_holder=f"user-{role}")
    readable = _gets(urls)
    failures = []
    for path, url in urls.items():
        response = client.get(url, HTTP_ACCEPT=PAGE)
        wanted = 200 if path in readable else 405
        if role != "admin" and path.startswith(ADMIN_ONLY):
            wanted = 403
        if response.status_code != wanted:
            failures.append(f"{url}: {response.status_code}")
        elif path.endswith(OWN_FORMAT):  # the path chooses the format, not Accept
            continue
        elif not response.get("Content-Type", "").startswith("text/html"):
            failures.append(f"{url}: {response.get('Content-Type')}")
        elif TRACEBACK in response.content.decode(errors="replace"):
            failures.append(f"{url}: the page shows a traceback")
    assert not failures, "\n".join(failures)
    assert len(urls) > 30


def test_the_page_offers_only_the_forms_the_role_may_use(live):
    """The queue: a viewer gets no write form, an operator may PATCH but not DELETE, an admin
    both (DRF asks the view's permissions per method, as the request itself will)."""

    def methods(role: str) -> set[str]:
        html = signed_in_client(role).get(QUEUE, HTTP_ACCEPT=PAGE).content.decode()
        return set(re.findall(r'data-method="([A-Z]+)"', html)) - {"OPTIONS"}

    assert methods("viewer") == set()
    assert "PATCH" in methods("operator") and "DELETE" not in methods("operator")
    assert {"PATCH", "DELETE"} <= methods("admin")


def _csrf_client(role: str) -> tuple[Client, str]:
    """A session client that enforces CSRF, as a browser on the page does, and its token."""
    client = signed_in_client(role)
    client.handler.enforce_csrf_checks = True
    page = client.get(f"{API}/", HTTP_ACCEPT=PAGE).content.decode()
    token = re.search(r'"csrfToken": "([^"]+)"', page)
    assert token, "the page carries the CSRF token for its forms"
    return client, token.group(1)


def test_a_write_from_the_page_needs_the_csrf_token_and_the_role(live):
    body = {"max": {"memory": "5G"}, "version": Queue.objects.get(path="root.team.b").version,
            "comment": "from the page"}  # fmt: skip
    viewer, viewer_token = _csrf_client("viewer")
    refused = viewer.patch(QUEUE, body, content_type="application/json",
                           HTTP_X_CSRFTOKEN=viewer_token)  # fmt: skip
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"

    operator, token = _csrf_client("operator")
    forged = operator.patch(QUEUE, body, content_type="application/json")
    assert forged.status_code == 403 and "CSRF" in forged.json()["detail"]
    assert ConfigRevision.objects.filter(comment="from the page").count() == 0

    saved = operator.patch(QUEUE, body, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert saved.status_code == 200, saved.content
    assert ConfigRevision.objects.filter(comment="from the page").count() == 1


def test_the_html_form_of_a_flat_body_is_accepted_with_its_csrf_field(live):
    """The page's HTML form posts ``csrfmiddlewaretoken`` with the fields: not an unknown field."""
    admin, token = _csrf_client("admin")
    version = Partition.objects.get(name="default").version
    form = f"csrfmiddlewaretoken={token}&comment=from+the+form&version={version}"
    response = admin.post(f"{API}/revisions/1/revert", form,
                          content_type="application/x-www-form-urlencoded")  # fmt: skip
    assert response.status_code == 201, response.content
    assert ConfigRevision.objects.filter(comment="from the form").exists()


def test_anonymous_visitors_get_no_page(live):
    anonymous = Client()
    for url in ["/api/v1/", f"{API}/queues/", QUEUE, "/api/v1/runs/"]:
        response = anonymous.get(url, HTTP_ACCEPT=PAGE)
        assert response.status_code == 302, url
        assert response["Location"] == f"/accounts/login/?next={urllib.parse.quote(url)}"
    response = anonymous.post(f"{API}/simulate", {}, content_type="application/json",
                              HTTP_ACCEPT=PAGE)  # fmt: skip
    assert response.status_code == 401 and response["Content-Type"] == "application/json"
    html_only = anonymous.get(f"{API}/queues/", HTTP_ACCEPT="text/html")
    assert html_only.status_code == 302


def test_token_clients_get_json_whatever_they_accept(live):
    response = role_client("viewer").get(f"{API}/queues/", HTTP_ACCEPT=PAGE)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json()["results"]


def test_the_page_loads_its_assets_from_this_server_and_links_back_to_the_console(live):
    html = signed_in_client("viewer").get("/api/v1/", HTTP_ACCEPT=PAGE).content.decode()
    assets = set(re.findall(r'(?:src|href)="([^"]+\.(?:css|js))"', html))
    assert assets and all(asset.startswith("/static/") for asset in assets), assets
    for asset in assets:
        assert Client().get(asset).status_code == 200, asset
    assert re.search(r'<a class="navbar-brand" href="/">[^<]*console', html)


def _production_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in settings_variables()}
    env.update(
        DJANGO_SETTINGS_MODULE="scheduler_admin.settings",
        SCHEDULER_ENV="production",
        SECRET_KEY=get_random_secret_key(),
        ALLOWED_HOSTS="scheduler.example.com",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        STATIC_ROOT=str(tmp_path / "static"),
    )
    return env


def _manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=PROJECT_DIR, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result


PAGE_IN_PRODUCTION = """
import re, sys
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone
user = get_user_model().objects.create_user("v")
user.groups.add(Group.objects.get_or_create(name="viewer")[0])
client = Client(HTTP_HOST="scheduler.example.com")
client.force_login(user)
response = client.get("/api/v1/", HTTP_ACCEPT="text/html", secure=True)
assert response.status_code == 200, response.status_code
for asset in sorted(set(re.findall(r'(?:src|href)="(/static/[^"]+)"', response.content.decode()))):
    print(asset)
"""


def test_in_production_the_page_is_served_with_collected_assets(tmp_path):
    """Production: hashed static files from ``collectstatic`` (whitenoise, no finders). The
    browsable API is on, and every asset its page names was collected."""
    env = _production_env(tmp_path)
    _manage(env, "collectstatic", "--noinput")
    _manage(env, "migrate", "--noinput")
    printed = _manage(env, "shell", "-c", PAGE_IN_PRODUCTION).stdout.split()
    assets = [line for line in printed if line.startswith("/static/")]
    assert any("rest_framework/css/bootstrap" in asset for asset in assets), assets
    for asset in assets:
        assert (tmp_path / "static" / asset.removeprefix("/static/")).is_file(), asset
    assert all(re.search(r"\.[0-9a-f]{12}\.", asset) for asset in assets), assets  # hashed
