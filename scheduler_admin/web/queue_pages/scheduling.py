"""The queue edit form's "apply at" (SPEC 6 "Scheduled changes"): when it is filled, the page
keeps the edit as a scheduled change (``queues.scheduled.schedule_queue_change``, checked
exactly as the save would be) instead of saving it, and shows refusals in place as a save does.

The form always holds all three fields (guaranteed, max, properties); a scheduled change names
only those the user changed, so that at its time the others keep whatever was saved meanwhile.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from preemption.hierarchy import ConfigErrors
from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.permissions import EDIT_QUEUE
from scheduler_admin.base import errors
from scheduler_admin.queues import scheduled, services
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_config
from scheduler_admin.web.common import queue_url
from scheduler_admin.web.queue_pages.forms import QueueEdit


def schedule_from_form(
    request: HttpRequest, partition: Partition, path: str, edit: QueueEdit
) -> HttpResponse | None:
    """Keep the edit as a scheduled change for the form's "apply at"; a redirect to the queue
    page on success, None with the errors attached to the form (in place) otherwise."""
    data = edit.form.cleaned_data
    changes = changed_fields(partition, path, edit.changes())
    if not changes:
        edit.errors.append(
            "Nothing to schedule: the form holds the values saved now. Change a value first."
        )
        return None
    try:
        change = scheduled.schedule_queue_change(
            partition.name, path, version=data["version"], actor=request.user,
            comment=data["comment"], apply_at=data["apply_at"],
            authorize=permissions.authorizer(request.user, EDIT_QUEUE, path), **changes,
        )  # fmt: skip
    except ConfigErrors as exc:
        edit.attach_config_errors(exc.errors, path)
        return None
    except errors.Invalid as exc:
        for field, messages_of in exc.errors.items():
            for message in messages_of:
                edit.form.add_error(field if field in edit.form.fields else None, message)
        return None
    except services.StaleVersion as exc:
        edit.stale = (
            f"Someone saved this queue since you opened the page (it is now at version "
            f"{exc.current}). Nothing was scheduled. Reload the page, then make yours again."
        )
        return None
    except services.NotFound as exc:
        edit.errors.append(f"{exc} (it may have been deleted meanwhile): nothing was scheduled.")
        return None
    messages.success(
        request,
        f"Scheduled change {change.pk} of {path} for {change.apply_at:%Y-%m-%d %H:%M} UTC: "
        "it will be checked again and saved then.",
    )
    return redirect(queue_url(partition.name, path) + "#scheduled")


def changed_fields(partition: Partition, path: str, form: dict[str, Any]) -> dict[str, Any]:
    """The form's fields whose value differs from the queue as saved now."""
    queue = current_config(partition).queue(path)
    if queue is None:
        return form
    return {field: value for field, value in form.items() if dict(getattr(queue, field)) != value}
