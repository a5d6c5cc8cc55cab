"""Scheduled changes in the console (SPEC 6): the queue edit form's "apply at" schedules the
change instead of saving it, with refusals in place; the queue page and the dashboard list
the changes; the Cancel button works for its author and an admin only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from scheduler_admin.accounts.tasks import apply_scheduled_changes
from scheduler_admin.queues.models import ConfigRevision, Queue, ScheduledChange, ScheduledStatus
from scheduler_admin.web.common import queue_url
from tests.integration.test_web_queue_page import edit_body
from tests.support.console import signed_in_client
from tests.support.factories.partitions import GB, imported_partition
from tests.support.tenants import TENANTS_CONFIG

pytestmark = pytest.mark.django_db

WEB = "root.team-a.web"


@pytest.fixture
def partition():
    return imported_partition(TENANTS_CONFIG, comment="tenants")


def schedule_body(queue: Queue, apply_at: str, memory: str = "40G") -> dict[str, str]:
    body = edit_body(queue, action="save", comment="night shrink", apply_at=apply_at)
    body.update({"res-0-name": "memory", "res-0-max": memory, "res-0-guaranteed": ""})
    return body


def test_the_edit_form_schedules_when_apply_at_is_given_and_saves_nothing_now(partition) -> None:
    operator = signed_in_client("operator", "op")
    queue = Queue.objects.get(path=WEB)
    revisions = ConfigRevision.objects.count()
    moment = (datetime.now(UTC) + timedelta(hours=3)).replace(microsecond=0)
    # A datetime-local value: no offset, read as UTC.
    response = operator.post(
        queue_url("default", WEB), schedule_body(queue, moment.strftime("%Y-%m-%dT%H:%M:%S"))
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    change = ScheduledChange.objects.get()
    # Only the field the user changed is named: the others keep later edits at its time.
    assert change.apply_at == moment and change.change == {"max": {"memory": 40 * GB}}
    assert ConfigRevision.objects.count() == revisions
    page = operator.get(queue_url("default", WEB)).content.decode()
    assert "Scheduled changes" in page and "max: memory 40G" in page and "night shrink" in page
    dashboard = operator.get("/?partition=default").content.decode()
    assert f'data-scheduled-change="{change.pk}"' in dashboard

    with time_machine.travel(moment + timedelta(seconds=1), tick=False):
        apply_scheduled_changes()
    assert Queue.objects.get(path=WEB).max == {"memory": 40 * GB}


def test_a_past_apply_at_or_a_refused_change_is_shown_in_place(partition) -> None:
    operator = signed_in_client("operator", "op")
    queue = Queue.objects.get(path=WEB)
    past = operator.post(queue_url("default", WEB), schedule_body(queue, "2020-01-01T00:00"))
    assert past.status_code == 200
    assert "must be in the future" in past.content.decode()
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    too_big = operator.post(queue_url("default", WEB), schedule_body(queue, future, "500G"))
    assert too_big.status_code == 200 and "parent" in too_big.content.decode()
    assert not ScheduledChange.objects.exists()


def test_the_cancel_button_is_its_authors_and_an_admins_only(partition) -> None:
    author = signed_in_client("operator", "author")
    queue = Queue.objects.get(path=WEB)
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    author.post(queue_url("default", WEB), schedule_body(queue, future))
    change = ScheduledChange.objects.get()
    cancel_url = f"/partitions/default/scheduled/{change.pk}/cancel"

    other = signed_in_client("operator", "op2")
    assert cancel_url not in other.get(queue_url("default", WEB)).content.decode()
    assert other.post(cancel_url).status_code == 403
    assert cancel_url in author.get(queue_url("default", WEB)).content.decode()

    admin = signed_in_client("admin", "adm")
    back = queue_url("default", WEB)
    response = admin.post(cancel_url, {"next": back})
    assert response.status_code == 302 and response["Location"] == back
    change.refresh_from_db()
    assert change.status == ScheduledStatus.CANCELLED and change.cancelled_by == "adm"
    assert "Cancelled by adm" in admin.get(back).content.decode()


def test_a_form_that_changes_nothing_schedules_nothing(partition) -> None:
    operator = signed_in_client("operator", "op")
    queue = Queue.objects.get(path=WEB)
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    body = edit_body(queue, action="save", comment="same", apply_at=future)
    response = operator.post(queue_url("default", WEB), body)
    assert response.status_code == 200 and "Nothing to schedule" in response.content.decode()
    assert not ScheduledChange.objects.exists()


def test_a_preview_with_apply_at_says_it_will_be_judged_again(partition) -> None:
    operator = signed_in_client("operator", "op")
    queue = Queue.objects.get(path=WEB)
    future = (timezone.now() + timedelta(hours=1)).isoformat()
    body = schedule_body(queue, future)
    body["action"] = "preview"
    page = operator.post(queue_url("default", WEB), body).content.decode()
    assert "Preview of the change" in page and "validated again" in page
    assert not ScheduledChange.objects.exists()
