"""Import a YuniKorn ``queues.yaml`` in the browser (admins): upload or paste, preview what
changes per partition (and the quota timers it would start, reset or cancel, with the plan each
would run, as the queue page's preview shows them), then save all partitions as one
all-or-nothing change.

The same path as ``manage.py import_config``: ``parse_queues_yaml`` validates the whole file
(every error with its path and line), ``import_partition_configs`` saves it with revisions and
audit in one transaction. The preview keeps the file's text in the form, so Save sends exactly
what was previewed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigErrors
from preemption.yunikorn import yunikorn_min_version
from scheduler_admin.accounts.permissions import ADMINISTER, authorizer
from scheduler_admin.base import limits
from scheduler_admin.base.deadlines import RequestTimedOut
from scheduler_admin.cluster.resource_types import import_warnings
from scheduler_admin.enforcement.previews import preview_change
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.yaml_io import error_lines, parse_queues_yaml
from scheduler_admin.web.change_requests.views import held_message
from scheduler_admin.web.common import require, revision_link
from scheduler_admin.web.history.changes import Changes, compare
from scheduler_admin.web.plans import PlanView, plan_view


class ImportForm(forms.Form):
    file = forms.FileField(
        label="queues.yaml file", required=False, help_text="Or paste the YAML below."
    )
    text = forms.CharField(
        label="YAML",
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
    )
    comment = forms.CharField(
        label="Comment (saved with each new revision)", max_length=limits.COMMENT_MAX_LENGTH
    )
    #: The version of each partition the preview was made against (JSON: name -> version, or
    #: null for a partition that did not exist): Save refuses if one moved since.
    previewed = forms.CharField(required=False, widget=forms.HiddenInput, max_length=100_000)

    def clean_previewed(self) -> dict[str, int | None] | None:
        raw = self.cleaned_data.get("previewed") or ""
        if not raw:
            return None
        try:
            versions = json.loads(raw)
        except ValueError:
            versions = None
        valid = isinstance(versions, dict) and all(
            isinstance(name, str) and (version is None or type(version) is int)
            for name, version in versions.items()
        )
        if not valid:
            raise forms.ValidationError("Preview the file again before saving.")
        return versions

    def clean(self) -> dict[str, object]:
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > settings.CONFIG_MAX_BYTES:
                self.add_error(
                    "file", f"The file is over the {settings.CONFIG_MAX_BYTES}-byte limit."
                )
                return data
            data["content"] = upload.read()
            data["source"] = upload.name
        elif (data.get("text") or "").strip():
            data["content"] = data["text"].encode("utf-8")
            data["source"] = "pasted YAML"
        else:
            self.add_error("file", "Choose a file or paste the YAML.")
        return data


@dataclass(frozen=True)
class TimerLine:
    """One quota timer the import would ``start``, ``reset`` or ``cancel`` (delay in seconds,
    None for a cancel)."""

    queue: str
    change: str
    delay: int | None = None


@dataclass(frozen=True)
class PartitionPreview:
    name: str
    is_new: bool
    queue_count: int
    changes: Changes
    version: int | None
    #: Valid settings YuniKorn reads differently ("location: message"); they do not block Save.
    warnings: tuple[str, ...] = ()
    #: The oldest YuniKorn release that reads the export as this product does, and why.
    yunikorn_min_version: str | None = None
    yunikorn_min_version_reasons: tuple[str, ...] = ()
    #: The quota timers saving the file would start, reset or cancel in this partition.
    timers: tuple[TimerLine, ...] = ()
    #: (heading id, plan) of the quota enforcement each started timer would run when due.
    plans: tuple[tuple[str, PlanView], ...] = ()
    quota_preemption_enabled: bool = False


def preview(configs: list[PartitionConfig]) -> list[PartitionPreview]:
    """What the import would change in each partition of the file (a new partition is
    compared with an empty tree, so every queue shows as added, and starts no timer)."""
    current = {p.name: p for p in Partition.objects.filter(name__in=[c.name for c in configs])}
    items = []
    for index, config in enumerate(configs):
        partition = current.get(config.name)
        before = partition.current_config() if partition else replace(config, queues=())
        timers, plans = _timer_preview(partition, config, f"p{index}") if partition else ((), ())
        version, reasons = yunikorn_min_version([config])
        items.append(
            PartitionPreview(
                config.name,
                partition is None,
                len(config.queues),
                compare(before, config),
                partition.version if partition else None,
                tuple(str(warning) for warning in import_warnings(partition, config)),
                version,
                tuple(reasons),
                timers,
                plans,
                config.settings.quota_preemption_enabled,
            )
        )
    return items


def _timer_preview(
    partition: Partition, config: PartitionConfig, prefix: str
) -> tuple[tuple[TimerLine, ...], tuple[tuple[str, PlanView], ...]]:
    """The queue edit preview's own computation (``preview_change``, i.e. the engine's timer
    rules on the pending timers), for the whole imported partition."""
    result = preview_change(partition, config)
    lines = [
        TimerLine(path, "reset" if path in result.reset else "start", timer.delay)
        for path, timer in sorted(result.timers.items())
    ]
    lines += [TimerLine(path, "cancel") for path in result.cancelled]
    plans = tuple(
        (
            f"{prefix}-{number}",
            plan_view(plan, partial(result.described, path), title=f"Quota enforcement on {path}"),
        )
        for number, (path, plan) in enumerate(sorted(result.plans.items()), start=1)
    )
    return tuple(lines), plans


@require_http_methods(["GET", "POST"])
def history_import(request: HttpRequest) -> HttpResponse:
    """Steps: GET shows the form; POST ``preview`` validates and shows the changes (nothing is
    saved) with the YAML kept in the form; POST ``save`` validates again and saves."""
    require(request.user, ADMINISTER)
    if request.method == "GET":
        return _render(request, ImportForm(), [], None)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _render(request, form, [], None, status=400)
    content: bytes = form.cleaned_data["content"]
    source: str = form.cleaned_data["source"]
    # Keep the text in the form: the preview's Save sends exactly what was previewed.
    initial = {"text": content.decode("utf-8", "replace"), "comment": form.cleaned_data["comment"]}
    kept = ImportForm(initial=initial)
    try:
        configs = parse_queues_yaml(
            content, settings_for=services.settings_for_import, source=source
        )
        if request.POST.get("action") != "save":
            previews = preview(configs)
            versions = {item.name: item.version for item in previews}
            kept = ImportForm(initial={**initial, "previewed": json.dumps(versions)})
            return _render(request, kept, [], previews)
        results = services.import_partition_configs(
            configs,
            actor=request.user,
            comment=form.cleaned_data["comment"],
            expected_revisions=form.cleaned_data["previewed"],
            authorize=authorizer(request.user, ADMINISTER, None),
            request_approval=True,
        )
    except ConfigErrors as exc:
        return _render(request, kept, error_lines(source, exc.errors), None, status=400)
    except RequestTimedOut as exc:
        return _render(request, kept, [str(exc.detail)], None, status=503)
    except services.StaleVersion as exc:
        message = (
            f"Nothing was saved: {exc}, since your preview (another change was saved "
            "meanwhile). Preview again to see what the import would change now."
        )
        return _render(request, kept, [message], None, status=409)
    for result in results:
        if result.change_request is not None:
            messages.info(request, held_message(result.change_request))
        elif result.revision is None:
            messages.info(request, f"Partition {result.partition.name}: unchanged.")
        else:
            name = result.partition.name
            saved = revision_link(name, result.revision.number)
            messages.success(request, format_html("Partition {}: saved as {}.", name, saved))
    first = results[0].partition.name if results else ""
    return HttpResponseRedirect(reverse("history") + (f"?partition={first}" if first else ""))


def _render(
    request: HttpRequest,
    form: ImportForm,
    errors: list[str],
    previews: list[PartitionPreview] | None,
    *,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "web/history/import.html",
        {"form": form, "errors": errors, "previews": previews},
        status=status,
    )
