"""An admin schedules a quota change in the queue page's edit form, sees it listed on the queue
page and the dashboard, and cancels another user's scheduled change there (SPEC 6 "Scheduled
changes"). Chromium against gunicorn + a Celery worker + beat."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import ConfigRevision, Queue, ScheduledChange, ScheduledStatus
from scheduler_admin.web.common import queue_url
from tests.e2e.browser import create_user, screenshot
from tests.support.factories.partitions import GB, imported_partition
from tests.support.tenants import TENANTS_CONFIG

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

WEB = "root.team-a.web"


def test_an_admin_schedules_a_change_sees_it_listed_and_cancels_another(
    signed_in_page: Callable[..., Page],
) -> None:
    imported_partition(TENANTS_CONFIG, comment="tenants")
    create_user("olga", "operator")
    olga = get_user_model().objects.get(username="olga")
    theirs = scheduled.schedule_queue_change(
        "default", WEB, version=Queue.objects.get(path=WEB).version, actor=olga,
        comment="olga's weekend quota", apply_at=datetime.now(UTC) + timedelta(days=2),
        max={"memory": 120 * GB},
    )  # fmt: skip
    revisions = ConfigRevision.objects.count()

    admin = signed_in_page("admin", "ada")
    admin.goto(queue_url("default", WEB))
    form = admin.locator("form.edit-form")
    form.locator('input[name="res-0-name"]').fill("memory")
    form.locator('input[name="res-0-max"]').fill("80G")
    form.get_by_label("Change comment").fill("evening shrink")
    at = (datetime.now(UTC) + timedelta(hours=6)).replace(second=0, microsecond=0)
    form.get_by_label("Apply at (optional, UTC)").fill(at.strftime("%Y-%m-%dT%H:%M"))
    form.get_by_role("button", name="Save").click()

    expect(admin.locator("ul.messages")).to_contain_text("it will be checked again and saved then")
    mine = ScheduledChange.objects.exclude(pk=theirs.pk).get()
    assert mine.apply_at == at and mine.author_name == "ada"
    assert ConfigRevision.objects.count() == revisions  # nothing saved yet
    listed = admin.locator("#scheduled")
    expect(listed.locator(f'[data-scheduled-change="{mine.pk}"]')).to_contain_text("evening shrink")
    expect(listed.locator(f'[data-scheduled-change="{mine.pk}"]')).to_contain_text(
        "max: memory 80G"
    )
    screenshot(admin, "scheduled-changes-queue-page")

    admin.goto("/?partition=default")
    row = admin.locator(f'#scheduled [data-scheduled-change="{theirs.pk}"]')
    expect(row).to_contain_text("olga's weekend quota")
    row.get_by_role("button", name=f"Cancel scheduled change {theirs.pk}").click()
    expect(admin.locator(f'#scheduled [data-scheduled-change="{theirs.pk}"]')).to_contain_text(
        "Cancelled by ada"
    )
    theirs.refresh_from_db()
    assert theirs.status == ScheduledStatus.CANCELLED
    assert ScheduledChange.objects.get(pk=mine.pk).status == ScheduledStatus.PENDING
    screenshot(admin, "scheduled-changes-dashboard")
