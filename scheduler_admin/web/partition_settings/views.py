"""The partition settings page.

Anyone who may read something of the partition sees every setting, with what each does (a
queue grant's holder too, as over the API: the settings are no tenant's data); an admin
(``ADMINISTER`` on the partition) also gets the form, which saves through
``queues.services.update_partition_settings`` exactly as ``PATCH partitions/{p}/`` does: one new
revision, audited, refused whole when a value is wrong (the errors in place, nothing saved) or
when someone saved the partition since the page was read (the version it was read at travels
in the form).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods

from preemption.hierarchy import ConfigErrors
from scheduler_admin.accounts.permissions import ADMINISTER, READ, authorizer, can
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.common import partition_or_404, require, revision_link
from scheduler_admin.web.partition_settings.forms import FIELDS, PartitionSettingsForm


@require_http_methods(["GET", "POST"])
def partition_settings(request: HttpRequest, partition: str) -> HttpResponse:
    """Steps: 403 unless the user may read in the partition (and, for a POST, administer it);
    a valid POST saves and redirects back with the revision it made; an invalid one, or one
    the service refuses, renders the form again with the input and the errors."""
    if "\x00" in partition:
        raise Http404("no such partition")
    require(request.user, READ, partition, anywhere=True)
    if request.method == "POST":
        require(request.user, ADMINISTER, partition)
    part = partition_or_404(partition)
    may_edit = bool(can(request.user, ADMINISTER, part))
    form: PartitionSettingsForm | None = None
    stale = ""
    if request.method == "POST":
        form = PartitionSettingsForm(request.POST)
        if form.is_valid() and form.unconfirmed_enforce(part):
            form.add_error(
                "confirm_enforce",
                "Switching to enforce evicts: the queues the partition observed over their max "
                "are judged again at the next sweep and their victims evicted. Tick to confirm.",
            )
        elif form.is_valid():
            try:
                result = services.update_partition_settings(
                    part.name,
                    actor=request.user,
                    comment=form.cleaned_data["comment"],
                    expected_revision=form.cleaned_data["version"],
                    authorize=authorizer(request.user, ADMINISTER, None),
                    **form.settings(),
                )
            except ConfigErrors as exc:
                for error in exc.errors:
                    name = error.field.split("[", 1)[0].split(".", 1)[0]
                    form.add_error(name if name in FIELDS else None, error.message)
            except services.StaleVersion as exc:
                stale = (
                    "Someone saved this partition since you opened the page (it is now at "
                    f"version {exc.current}). Nothing was saved. Reload the page to see their "
                    "change, then make yours again."
                )
            else:
                if result.revision is None:
                    messages.info(request, "Nothing to save: the values are the ones saved.")
                else:
                    saved = revision_link(part.name, result.revision.number)
                    messages.success(
                        request, format_html("Saved the settings of {} as {}.", part.name, saved)
                    )
                return redirect(_page_url(part))
    elif may_edit:
        form = PartitionSettingsForm(
            initial=PartitionSettingsForm.initial_for(part.settings_config(), part.version)
        )
    return render(
        request,
        "web/partition_settings/page.html",
        {
            "partition": part,
            "settings": part.settings_config(),
            "form": form,
            "may_edit": may_edit,
            "stale": stale,
        },
    )


def _page_url(partition: Partition) -> str:
    return reverse("partition-settings", kwargs={"partition": partition.name})
