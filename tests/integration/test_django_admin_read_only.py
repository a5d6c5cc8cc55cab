"""No back doors: the Django admin at ``/admin/`` writes nothing at all, users and groups
included (``scheduler_admin.web.admin_site``).

Before, the product's own models were read-only there but Django's ``User`` and ``Group`` were
not: an admin created accounts and made a role-less user a superuser, with no audit row and
none of the product's rules. Here every URL the admin site exposes for every registered model
(derived from the site's registry, so a model registered later is covered without a change
here) is posted to as a superuser: each answers 403 and not one row of any table changes, no
admin log entry and no audit event is written. The add pages refuse even to show; the change
pages show the row without a form to save. The site's own password change sends people to the
product's page, which checks the current password and audits the change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from scheduler_admin.accounts import services
from scheduler_admin.accounts.grants import give_grant, set_groups
from scheduler_admin.accounts.roles import role_of
from scheduler_admin.audit.models import AuditEvent
from tests.support.tenants import tenant_state

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-pass-phrase-42"


@dataclass(frozen=True)
class AdminUrl:
    model: type[Model]
    name: str
    url: str


def _an_object_id(model: type[Model]) -> str:
    row = model._default_manager.order_by("pk").first()
    return str(row.pk) if row is not None else "1"


def admin_urls() -> Iterator[AdminUrl]:
    """Every named URL of every ``ModelAdmin`` the site has registered, with an existing
    object's id where the URL takes one."""
    for model, model_admin in admin.site._registry.items():
        for pattern in model_admin.urls:
            if pattern.name is None:  # the bare "<id>/" redirect to the change page
                continue
            # Every parameter of a ModelAdmin URL is the object's id (object_id, id).
            kwargs = {name: _an_object_id(model) for name in pattern.pattern.converters}
            yield AdminUrl(model, pattern.name, reverse(f"admin:{pattern.name}", kwargs=kwargs))


def _snapshot() -> dict[str, int]:
    """Rows per table of every installed model (admin log and audit included)."""
    return {model._meta.label: model._default_manager.count() for model in apps.get_models()}


@pytest.fixture
def superuser_client() -> Client:
    tenant_state()
    services.create_user("ada", role="admin", actor=None, password=PASSWORD)
    tina = services.create_user("tina", role="viewer", actor=None, password=PASSWORD).user
    set_groups(tina, ["tenant-a"], actor=None)
    give_grant(partition="default", queue_path="root.team-a", role="admin", group="tenant-a",
               actor=None)  # fmt: skip
    client = Client()
    assert client.login(username="ada", password=PASSWORD)
    return client


def test_the_admin_registers_users_and_groups_and_every_product_model(superuser_client):
    """The registry the other tests walk: Django's User and Group among the product's models
    (so the walk covers the back door that was open)."""
    registered = {model._meta.label for model in admin.site._registry}
    assert {"auth.User", "auth.Group", "queues.Queue", "enforcement.PreemptionRun"} <= registered
    names = [url.name for url in admin_urls()]
    assert {"auth_user_add", "auth_user_change", "auth_user_delete", "auth_user_password_change",
            "auth_group_add", "auth_group_change", "auth_group_delete"} <= set(names)  # fmt: skip


def test_every_add_change_and_delete_url_of_the_admin_refuses_a_write(superuser_client):
    before = _snapshot()
    events = AuditEvent.objects.count()
    refused = []
    for target in admin_urls():
        form = {
            "username": "mallory", "password1": PASSWORD, "password2": PASSWORD,
            "name": "sneaky", "is_superuser": "on", "is_staff": "on", "post": "yes",
            "action": "delete_selected", "_selected_action": _an_object_id(target.model),
        }  # fmt: skip
        answer = superuser_client.post(target.url, form)
        assert answer.status_code == 403, f"{target.name} ({target.url}): {answer.status_code}"
        refused.append(target.name)
    assert len(refused) >= 3 * len(admin.site._registry)  # add, change, delete at least
    assert _snapshot() == before
    assert not LogEntry.objects.exists()
    assert AuditEvent.objects.count() == events


def test_a_role_less_user_cannot_be_made_superuser_or_put_in_a_group_there(superuser_client):
    tina = get_user_model().objects.create_user("rolf", password=PASSWORD)  # no role at all
    change = reverse("admin:auth_user_change", args=[tina.pk])
    answer = superuser_client.post(
        change,
        {"username": "rolf", "is_active": "on", "is_staff": "on", "is_superuser": "on",
         "groups": [Group.objects.get(name="admin").pk], "date_joined_0": "2026-01-01",
         "date_joined_1": "00:00:00", "_save": "Save"},
    )  # fmt: skip
    assert answer.status_code == 403
    tina.refresh_from_db()
    assert (tina.is_superuser, tina.is_staff, role_of(tina)) == (False, False, None)
    made = superuser_client.post(
        reverse("admin:auth_user_add"),
        {"username": "mallory", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert made.status_code == 403
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert superuser_client.post(reverse("admin:auth_group_add"), {"name": "x"}).status_code == 403
    assert not Group.objects.filter(name="x").exists()
    password = reverse("admin:auth_user_password_change", args=[tina.pk])
    assert superuser_client.post(
        password, {"password1": "new-pass-phrase-77", "password2": "new-pass-phrase-77"}
    ).status_code == 403  # fmt: skip
    tina.refresh_from_db()
    assert tina.check_password(PASSWORD)


def test_the_admin_still_shows_rows_but_offers_no_way_to_change_them(superuser_client):
    tina = get_user_model().objects.get(username="tina")
    assert superuser_client.get(reverse("admin:auth_user_add")).status_code == 403
    page = superuser_client.get(reverse("admin:auth_user_change", args=[tina.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "tina" in html and 'name="_save"' not in html and "Delete" not in html
    listing = superuser_client.get(reverse("admin:auth_user_changelist")).content.decode()
    assert "delete_selected" not in listing and "Add user" not in listing
    index = superuser_client.get(reverse("admin:index")).content.decode()
    assert "Read-only: changes are made in the console" in index


def test_the_admins_password_change_is_the_products(superuser_client):
    answer = superuser_client.get(reverse("admin:password_change"))
    assert answer.status_code == 302 and answer["Location"] == reverse("my-password")
    refused = superuser_client.post(
        reverse("admin:password_change"),
        {"old_password": PASSWORD, "new_password1": "x-new-pass-99", "new_password2": "x"},
    )
    assert refused.status_code == 403
    assert get_user_model().objects.get(username="ada").check_password(PASSWORD)


def test_signing_in_and_out_of_the_admin_still_work(superuser_client):
    signed_out = superuser_client.post(reverse("admin:logout"))
    assert (signed_out.status_code, signed_out["Location"]) == (302, "/accounts/login/")
    assert superuser_client.get(reverse("admin:index")).status_code == 302  # to the sign-in
    signed_in = Client().post(
        reverse("admin:login"), {"username": "ada", "password": PASSWORD, "next": "/admin/"}
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/"
