"""Nothing is readable without signing in; the dashboard shows the saved tree."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command

from scheduler_admin.accounts.roles import ADMIN, OPERATOR, VIEWER, has_role, role_of

pytestmark = pytest.mark.django_db

DEMO = "demo/queues.yaml"


@pytest.mark.parametrize("url", ["/", "/admin/"])
def test_pages_redirect_anonymous_users_to_sign_in(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_health_check_is_open_and_checks_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_sign_in_then_dashboard_shows_the_demo_tree(client):
    call_command("import_config", DEMO, stdout=io.StringIO())
    get_user_model().objects.create_user("vera", password="vera-pass-123")
    Group.objects.get(name=VIEWER).user_set.add(get_user_model().objects.get(username="vera"))

    bad = client.post("/accounts/login/", {"username": "vera", "password": "wrong"})
    assert bad.status_code == 200 and b"didn't match" in bad.content

    good = client.post("/accounts/login/", {"username": "vera", "password": "vera-pass-123"})
    assert good.status_code == 302 and good["Location"] == "/"
    page = client.get("/").content.decode()
    assert "Partition default" in page
    assert "vera (viewer)" in page
    for text in ("prod/", "research/", "batch/", "fence", "400Gi", "No worker has reported"):
        assert text in page
    # Deeper levels start collapsed and arrive with the children fragment.
    assert "nightly" not in page
    batch = client.get("/dashboard/children/", {"partition": "default", "queue": "root.batch"})
    assert "nightly" in batch.content.decode()
    assert "Django admin" not in page  # edit/admin controls only for admins


def test_login_form_is_csrf_protected():
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/accounts/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403


def test_roles_include_the_ones_below_them():
    user_model = get_user_model()
    operator = user_model.objects.create_user("olga")
    Group.objects.get(name=OPERATOR).user_set.add(operator)
    nobody = user_model.objects.create_user("nora")
    root = user_model.objects.create_superuser("root", "", "x")
    assert role_of(operator) == OPERATOR
    assert has_role(operator, VIEWER) and has_role(operator, OPERATOR)
    assert not has_role(operator, ADMIN)
    assert role_of(nobody) is None and not has_role(nobody, VIEWER)
    assert role_of(root) == ADMIN


def test_ensure_admin_creates_the_account_once_and_prints_a_generated_password(monkeypatch):
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    printed = out.getvalue()
    assert "Created admin account 'admin' with password: " in printed
    password = printed.split("password: ")[1].split()[0]
    admin = get_user_model().objects.get(username="admin")
    assert admin.check_password(password) and admin.is_superuser
    assert admin.groups.filter(name=ADMIN).exists()

    again = io.StringIO()
    call_command("ensure_admin", stdout=again)
    assert "exists; its password is unchanged" in again.getvalue()
    assert "password:" not in again.getvalue()


def test_ensure_admin_takes_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("ADMIN_PASSWORD", "from-the-env-42")
    out = io.StringIO()
    call_command("ensure_admin", "--username", "boss", stdout=out)
    assert "from-the-env-42" not in out.getvalue()
    assert get_user_model().objects.get(username="boss").check_password("from-the-env-42")


def test_ensure_admin_makes_the_account_through_the_services_audited_and_case_blind(monkeypatch):
    """Like every account, the first admin's is audited, its password checked, its name
    compared regardless of letter case."""
    from django.core.management import CommandError

    from scheduler_admin.audit.models import AuditEvent, AuditKind

    monkeypatch.setenv("ADMIN_PASSWORD", "x")
    with pytest.raises(CommandError, match="ADMIN_PASSWORD: This password is too short"):
        call_command("ensure_admin", stdout=io.StringIO())
    assert not get_user_model().objects.exists()
    monkeypatch.setenv("ADMIN_PASSWORD", "from-the-env-42")
    call_command("ensure_admin", stdout=io.StringIO())
    created = AuditEvent.objects.get(kind=AuditKind.USER_CREATED)
    assert (created.object_id, created.data["role"], created.actor_name) == (
        "admin",
        ADMIN,
        "system",
    )
    out = io.StringIO()
    call_command("ensure_admin", "--username", "ADMIN", stdout=out)
    assert out.getvalue() == "Admin account 'admin' exists; its password is unchanged.\n"
    assert get_user_model().objects.count() == 1


def test_dashboard_shows_usage_the_pending_timer_and_runs(admin_client):
    from scheduler_admin.cluster.services import ingest_cluster_state
    from scheduler_admin.enforcement import runs
    from scheduler_admin.queues import services
    from scheduler_admin.queues.models import Partition, Queue

    call_command("import_config", DEMO, stdout=io.StringIO())
    partition = Partition.objects.get(name="default")
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": f"t{i}", "queue": "root.batch.nightly", "node": "n1",
                 "resources": {"memory": "100Gi", "vcore": "10"}}
                for i in range(4)
            ],
        },
        actor=None,
    )  # fmt: skip
    nightly = Queue.objects.get(path="root.batch.nightly")
    services.update_queue(
        "default", nightly.path, version=nightly.version, actor=None, comment="shrink",
        max={"memory": 200 * 1024**3, "vcore": 100_000},
    )  # fmt: skip
    page = admin_client.get("/").content.decode()
    assert "memory 400Gi" in page and "over max" in page
    assert re.search(r"due in (1m|[1-5]?[0-9]s)<", page)  # the 60 s delay counting down

    from datetime import timedelta

    from django.utils import timezone

    [run_id] = runs.sweep_due_quota_timers(timezone.now() + timedelta(minutes=2))
    runs.execute_run(run_id, worker="w")
    page = admin_client.get("/").content.decode()
    assert "root.batch.nightly" in page and "complete" in page and "No run yet" not in page
