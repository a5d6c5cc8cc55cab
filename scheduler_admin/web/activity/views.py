"""Runs and Audit pages (SPEC 8): filterable lists, a run with its victims and the explanation
of every candidate, and the audit log with its exports.

Everything here reads, except an admin's abort of an active run (``runs.abort_run``). A queue
grant's holder sees the runs and events of their subtrees (``visibility.visible_runs``,
``visible_audit``); a run outside them answers 403 with the reason. The lists
bind the same FilterSets as the REST API (``RunFilterSet``, ``AuditEventFilter``), so a query
string means the same on ``/runs/`` and ``/api/v1/runs/``, and the export links can hand the
page's own query string to ``/api/v1/audit/export.*``. A filter value that does not parse is
shown next to its field and the list stays empty: the page never guesses what was meant and
never answers with a 500.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.permissions import ABORT_RUN, READ, can
from scheduler_admin.audit.filtersets import AuditEventFilter
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base.limits import COMMENT_MAX_LENGTH
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.filtersets import RunFilterSet
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    EvictionOrder,
    EvictionOutcome,
    EvictionStatus,
    PreemptionRun,
    RunCandidate,
    RunStatus,
)
from scheduler_admin.enforcement.runs.pacing import paced_progress
from scheduler_admin.enforcement.visibility import visible_audit, visible_runs
from scheduler_admin.web import eligibility_text
from scheduler_admin.web.activity import presenters
from scheduler_admin.web.common import partition_choices, require
from scheduler_admin.web.explanations import glossary_url, outcome_anchor, outcome_text

TIME_PLACEHOLDER = "2026-03-01T12:00Z"
TIME_HELP = "ISO 8601 date or time; without an offset it means UTC."

RUN_LABELS = {
    "partition": "Partition",
    "queue": "Queue (exactly)",
    "queue_subtree": "Queue and below",
    "policy": "Policy",
    "outcome": "Outcome",
    "status": "Status",
    "trigger": "Trigger",
    "since": "Created from",
    "until": "Created before",
}
AUDIT_LABELS = {
    "kind": "Kind",
    "partition": "Partition",
    "queue": "Queue (exactly)",
    "queue_prefix": "Queue and below",
    "actor": "Actor",
    "since": "From",
    "until": "Before",
    "q": "Summary contains",
}
PLACEHOLDERS = {
    "since": TIME_PLACEHOLDER,
    "until": TIME_PLACEHOLDER,
    "queue": "root.batch.nightly",
    "queue_subtree": "root.batch",
    "queue_prefix": "root.batch",
}


@require_safe
def run_list(request: HttpRequest) -> HttpResponse:
    """Runs newest first, filtered like ``GET /api/v1/runs/``; short / does-not-help runs are
    highlighted because they are the ones somebody has to look at."""
    require(request.user, READ, None, anywhere=True)
    queryset = visible_runs(
        request.user,
        PreemptionRun.objects.select_related("partition")
        .listed()
        .defer("targets", "freed", "nominations")  # the list needs none of them
        .order_by("-created_at", "-id"),
    )
    filterset = presenters.bind_filters(RunFilterSet, request, queryset, RUN_LABELS, PLACEHOLDERS)
    _dress(filterset)
    valid = filterset.is_valid()
    page = presenters.page_of(request, filterset.qs if valid else queryset.none())
    rows = [{"run": run, "alert": _alert(run), "words": outcome_text(run.outcome)} for run in page]
    return render(
        request,
        "web/activity/run_list.html",
        {
            "filterset": filterset,
            "valid": valid,
            "pager": presenters.pager(request, page),
            "rows": rows,
            "partitions": partition_choices(request).values_list("name", flat=True),
            "filtered": any(request.GET.get(name) for name in filterset.filters),
        },
    )


def _alert(run: PreemptionRun) -> bool:
    """Whether the run needs a look (it fell short). A run that stopped because it was no longer
    needed left its queue within max, whatever its plan said."""
    return presenters.is_alert(run.outcome) and run.status != RunStatus.STOPPED


def _visible_run_or_refuse(request: HttpRequest, pk: int) -> PreemptionRun:
    """The run, if the user may read it; else 404 (a global viewer: there is none) or 403 with
    the reason (a queue grant's holder: whether it exists outside their subtrees or not)."""
    runs_seen = visible_runs(request.user, PreemptionRun.objects.all())
    found = runs_seen.select_related("partition", "timer").filter(pk=pk).first()
    if found is None:
        if permissions.is_scoped(request.user):
            raise PermissionDenied(permissions.outside_reason(request.user, "", f"run {pk}"))
        raise Http404(f"No run {pk}.")
    return found


@require_safe
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: what started it and what it was for, how it ended in plain words, its victims
    in the order taken with why each was taken and its eviction order, targets against freed
    per leaf, and the explanation of every candidate (victims first). Victims and explanations
    are paged separately (``vpage``, ``epage``); ``reason`` narrows the explanations to one
    reason code. Everything about the candidates comes from the run's own record
    (``RunCandidate``), never from the cluster as it is now; what the cluster answered about
    each eviction order (acknowledged with its outcome, or its last report while pending) is
    kept on the order."""
    run = _visible_run_or_refuse(request, pk)
    victims = run.victims.select_related("eviction").order_by("position")
    victim_page = presenters.page_of(request, victims, "vpage")
    why = {
        candidate.candidate: presenters.stored_row(candidate)
        for candidate in run.candidates.filter(
            candidate__in=[victim.allocation_id for victim in victim_page]
        )
    }

    reason = request.GET.get("reason", "")
    candidates = run.candidates.order_by(*RunCandidate.ORDER)
    shown = candidates.filter(reason=reason) if reason else candidates
    explanation_page = presenters.page_of(request, shown, "epage")

    orders = EvictionOrder.objects.filter(run=run)
    now = timezone.now()
    waiting_long = presenters.soft_waiting_too_long(orders, now)
    # Labels and taints of the nodes named (SPEC 3.3), as the nodes are now.
    node_facts = eligibility_text.node_facts(
        run.partition, {victim.node_name for victim in victim_page} | ({run.node} - {""})
    )
    exports = [
        (label, reverse(f"api-run-export-{extension}", kwargs={"pk": run.pk}))
        for label, extension in (("CSV", "csv"), ("JSON", "json"))
    ]
    return render(
        request,
        "web/activity/run_detail.html",
        {
            "run": run,
            "subject": presenters.subject_facts(run.subject or {}),
            "outcome_words": outcome_text(run.outcome),
            "outcome_link": glossary_url(outcome_anchor(run.outcome)),
            "alert": _alert(run),
            "victim_count": victims.count(),
            # A victim whose order the cluster refused stays running: not preempted.
            "preempted_count": victims.filter(preempted_at__isnull=False)
            .exclude(eviction__outcome=EvictionOutcome.REFUSED)
            .count(),
            "victim_pager": presenters.pager(request, victim_page, "vpage"),
            "victim_rows": [(victim, why.get(victim.allocation_id)) for victim in victim_page],
            "leaves": presenters.leaf_rows(
                run.targets or {}, victims.values_list("allocation_id", "queue_path", "resources")
            ),
            "reasons": presenters.reason_counts(candidates),
            "reason": reason,
            "explanation_count": candidates.count(),
            "explanation_pager": presenters.pager(request, explanation_page, "epage"),
            "explanation_rows": [presenters.stored_row(c) for c in explanation_page],
            "exports": exports,
            "orders_total": orders.count(),
            "orders_pending": orders.filter(status=EvictionStatus.PENDING).count(),
            "orders_answers": presenters.cluster_answers(orders),
            "waiting_long": waiting_long,
            "node_facts": node_facts,
            "waiting_long_after": settings.SOFT_EVICTION_WAIT_WARNING_SECONDS,
            "active": run.status in ACTIVE_RUN_STATUSES,
            "progress": paced_progress(run, now),
            "may_abort": bool(can(request.user, ABORT_RUN, run.partition, run.queue_path)),
            "abort_form": AbortForm(),
        },
    )


class AbortForm(forms.Form):
    comment = forms.CharField(
        label="Why (kept with the run)", required=False, max_length=COMMENT_MAX_LENGTH
    )


@require_POST
def run_abort(request: HttpRequest, pk: int) -> HttpResponse:
    """An admin (global, or by a grant on the run's queue) ends an active run
    (``runs.abort_run``, which checks the right again under the partition lock); back to the
    run page with a message."""
    run = _visible_run_or_refuse(request, pk)
    require(request.user, ABORT_RUN, run.partition, run.queue_path)
    form = AbortForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The run was not aborted: " + " ".join(form.errors["comment"]))
        return redirect("run-detail", pk=run.pk)
    try:
        runs.abort_run(
            run.pk, actor=request.user, reason=form.cleaned_data["comment"],
            authorize=permissions.authorizer(request.user, ABORT_RUN, run.queue_path),
        )  # fmt: skip
    except runs.RunNotActive:
        messages.info(request, f"Run {run.pk} had already ended: nothing was aborted.")
    else:
        messages.success(
            request, f"Run {run.pk} aborted: its queue is free again. Victims already "
            "preempted stay preempted.",
        )  # fmt: skip
    return redirect("run-detail", pk=run.pk)


@require_safe
def audit_list(request: HttpRequest) -> HttpResponse:
    """The audit log newest first, filtered like ``GET /api/v1/audit/``, with export links that
    carry the page's filters to the API's CSV, JSON and PDF exports (same FilterSet there)."""
    require(request.user, READ, None, anywhere=True)
    queryset = visible_audit(request.user, AuditEvent.objects.order_by("-created_at", "-id"))
    filterset = presenters.bind_filters(
        AuditEventFilter, request, queryset, AUDIT_LABELS, PLACEHOLDERS
    )
    _dress(filterset)
    valid = filterset.is_valid()
    page = presenters.page_of(request, filterset.qs if valid else queryset.none())
    query = presenters.query_without(request.GET, "page")
    suffix = f"?{query}" if query else ""
    exports = [
        (label, reverse(f"audit-export-{extension}") + suffix, extension)
        for label, extension in (("CSV", "csv"), ("JSON", "json"), ("PDF report", "pdf"))
    ]
    return render(
        request,
        "web/activity/audit_list.html",
        {
            "filterset": filterset,
            "valid": valid,
            "pager": presenters.pager(request, page),
            "rows": presenters.audit_rows(page),
            "exports": exports,
            "partitions": partition_choices(request).values_list("name", flat=True),
            "filtered": any(request.GET.get(name) for name in filterset.filters),
        },
    )


def _dress(filterset: RunFilterSet | AuditEventFilter) -> None:
    """Presentation only: say on the form what the time fields accept (the API's help text
    speaks to clients) and offer the partition names (``<datalist id="partition-names">``)."""
    fields = filterset.form.fields
    for field in fields.values():
        field.help_text = ""  # the labels and placeholders say it; the API's text is for clients
    for name in ("since", "until"):
        fields[name].help_text = TIME_HELP
    fields["partition"].widget.attrs["list"] = "partition-names"
    if "kind" in fields:
        # Checkboxes: a multiple <select> needs Ctrl-click, which few people know.
        fields["kind"].widget = forms.CheckboxSelectMultiple(choices=fields["kind"].choices)
