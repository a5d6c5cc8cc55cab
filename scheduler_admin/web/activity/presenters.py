"""Read-only shaping of runs and audit events for the Runs and Audit pages.

Views stay thin: they filter, page and render; what a row shows (paging, the order and counts of
explanations, readable audit details) is decided here, in plain functions that take rows and
return rows. A run's candidates and per-leaf targets are the same rows the change preview and
the simulator show (``web.plans``: ``CandidateRow``, ``TargetRow``), so a stored run
and a previewed plan read alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet
from django.http import HttpRequest, QueryDict
from django.urls import reverse
from django_filters import FilterSet

from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base.api.params import is_whole_number
from scheduler_admin.enforcement.exports import STORED_AS
from scheduler_admin.enforcement.models import (
    ClusterStatus,
    EvictionOrder,
    EvictionOutcome,
    EvictionStatus,
    RunCandidate,
)
from scheduler_admin.web import plans
from scheduler_admin.web.explanations import (
    ALERT_OUTCOMES,
    glossary_url,
    reason_anchor,
    reason_text,
)
from scheduler_admin.web.plans import CandidateRow, TargetRow

#: Rows per page of every list on these pages. A run can explain 100,000 candidates, so the
#: explanation list is paged too rather than written out whole.
PER_PAGE = 50


# --------------------------------------------------------------------------------------------
# Filters and paging
# --------------------------------------------------------------------------------------------


def bind_filters(
    filterset_class: type[FilterSet],
    request: HttpRequest,
    queryset: Any,
    labels: Mapping[str, str],
    placeholders: Mapping[str, str],
) -> FilterSet:
    """Bind the API's own FilterSet to the page's query string (STYLE habit 8: one FilterSet
    serves API and HTML), relabelling its fields for people: django-filter's generated labels
    ("Created at is greater than or equal to") read badly on a form. Choice fields get "Any" as
    their empty choice. The parameter names stay those of the API, so the same query string
    works on both. Always bound (an empty query string is valid: no filter)."""
    filterset = filterset_class(request.GET, queryset=queryset)
    filterset.form.label_suffix = ""
    for name, field in filterset.form.fields.items():
        if name in labels:
            field.label = labels[name]
        if name in placeholders:
            field.widget.attrs["placeholder"] = placeholders[name]
        if getattr(field, "empty_label", None) is not None:  # django-filter's choice fields
            choices = [choice for choice in field.choices if choice[0] != ""]
            field.empty_label = "Any"
            field.choices = choices  # rebuilds the iterator that prepends the empty choice
    return filterset


def page_of(request: HttpRequest, items: Sequence[Any] | Any, param: str = "page") -> Page:
    """The requested page of ``items``; a missing or bad page number gives the first or last
    page instead of an error (``Paginator.get_page``)."""
    return Paginator(items, PER_PAGE).get_page(request.GET.get(param))


@dataclass(frozen=True)
class Pager:
    """Links to the neighbouring pages of one list, keeping every other parameter (filters, the
    other list's page) so paging one list of a page leaves the rest as it was."""

    page: Page
    param: str
    first: str
    previous: str
    next: str
    last: str


def pager(request: HttpRequest, page: Page, param: str = "page") -> Pager:
    def link(number: int) -> str:
        params = request.GET.copy()
        params[param] = str(number)
        return f"?{params.urlencode()}"

    last = page.paginator.num_pages
    return Pager(
        page=page,
        param=param,
        first=link(1) if page.number > 1 else "",
        previous=link(page.previous_page_number()) if page.has_previous() else "",
        next=link(page.next_page_number()) if page.has_next() else "",
        last=link(last) if page.number < last else "",
    )


def query_without(params: QueryDict, *names: str) -> str:
    """The query string minus the given parameters (paging), e.g. for export links that must
    carry the same filters as the page."""
    copy = params.copy()
    for name in names:
        copy.pop(name, None)
    return copy.urlencode()


def cluster_answers(orders: QuerySet[EvictionOrder]) -> list[tuple[str, int]]:
    """How many of a run's pending orders the cluster last reported as blocked, failed or
    waiting, in that order: ``[("Blocked by a disruption budget", 2), ...]``; then how many
    orders it refused (ended with the task left running)."""
    counts = dict(
        orders.filter(status=EvictionStatus.PENDING)
        .exclude(cluster_status="")
        .order_by()
        .values_list("cluster_status")
        .annotate(count=Count("*"))
    )
    answers = [(status.label, counts[status]) for status in ClusterStatus if counts.get(status)]
    refused = orders.filter(outcome=EvictionOutcome.REFUSED).count()
    if refused:  # ended, the task left running: the run did not preempt it
        answers.append(("Refused by the cluster (the task stays, not preempted)", refused))
    return answers


def soft_waiting_too_long(orders: QuerySet[EvictionOrder], now: datetime) -> set[int]:
    """Ids of the soft eviction orders still waiting for the pod's owner past
    ``SOFT_EVICTION_WAIT_WARNING_SECONDS`` (``EvictionOrder.waiting_too_long``)."""
    waiting = orders.filter(
        soft=True, status=EvictionStatus.PENDING, cluster_status=ClusterStatus.WAITING
    )
    return {order.pk for order in waiting if order.waiting_too_long(now)}


def is_alert(outcome: str) -> bool:
    """Outcomes the lists highlight: the run could not do what it was started for."""
    return outcome in ALERT_OUTCOMES


# --------------------------------------------------------------------------------------------
# Run detail
# --------------------------------------------------------------------------------------------


def leaf_rows(
    targets: Mapping[str, Mapping[str, int]], victims: Iterable[tuple[str, str, Mapping[str, int]]]
) -> list[TargetRow]:
    """Targets against freed amounts per leaf (quota runs), as the change preview shows them.

    The run stores one total ``freed``; per leaf it is the sum of that leaf's victims' resources
    as stored with the run (``RunVictim``, given as ``(allocation_id, queue_path, resources)``),
    not as the allocations are now: they may have been released and removed since.
    """
    rows = [
        plans.candidate_row(
            allocation_id, True, "victim", order=index + 1, queue=queue, resources=dict(amounts)
        )
        for index, (allocation_id, queue, amounts) in enumerate(victims)
    ]
    return plans.target_rows(targets, rows)


def stored_row(candidate: RunCandidate) -> CandidateRow:
    """A stored candidate as the plan rows show it: the facts and the specific reason kept
    with the run when it planned, never the cluster as it is now."""
    facts = {name: getattr(candidate, STORED_AS.get(name, name)) for name in plans.FACTS}
    facts["resources"] = facts["resources"] or {}
    return plans.candidate_row(
        candidate.candidate, candidate.accepted, candidate.reason, order=candidate.position, **facts
    )


@dataclass(frozen=True)
class ReasonCount:
    code: str
    words: str
    rule: str
    count: int
    accepted: bool
    link: str


def reason_counts(candidates: QuerySet[RunCandidate]) -> list[ReasonCount]:
    """How many candidates each reason covers, accepted ones first, then the most frequent: a
    summary that stays readable when the list below runs to thousands of pages (one grouped
    query, whatever the number of candidates)."""
    counts = candidates.order_by().values_list("accepted", "reason").annotate(total=Count("id"))
    rows = [
        ReasonCount(
            code, *reason_text(code), count=count, accepted=accepted,
            link=glossary_url(reason_anchor(code)),
        )
        for accepted, code, count in counts
    ]  # fmt: skip
    return sorted(rows, key=lambda row: (not row.accepted, -row.count, row.code))


@dataclass(frozen=True)
class SubjectFact:
    """One line of what a run was for: a label and either a text or a resource set."""

    label: str
    text: str = ""
    amounts: Mapping[str, int] | None = None


def subject_facts(subject: Mapping[str, Any]) -> list[SubjectFact]:
    """The run's stored subject (``preemption.explain.subject_facts``) as labelled lines, in a
    fixed order; keys it does not have are left out (runs planned before it was kept have
    none)."""
    labels = (
        ("ask", "Ask"), ("job", "Job"), ("asks", "Asks of the job"),
        ("application", "Application"), ("queue", "Queue"), ("priority", "Priority"),
        ("preemptible", "Preemptible"), ("preemption_policy", "Preemption policy"),
        ("required_node", "Required node"), ("created_at", "Waiting since"),
        ("fence", "Fence root"), ("resources", "Requests"), ("request", "Requests (all asks)"),
        ("usage", "Usage"), ("max", "New max"), ("guaranteed", "Guaranteed"),
        ("target", "Target (to free)"),
    )  # fmt: skip
    facts = []
    for key, label in labels:
        if key not in subject or subject[key] in ("", None):
            continue
        value = subject[key]
        if isinstance(value, dict):
            facts.append(SubjectFact(label, amounts=value))
        elif isinstance(value, bool):
            facts.append(SubjectFact(label, "yes" if value else "no"))
        elif isinstance(value, list):
            facts.append(SubjectFact(label, ", ".join(str(item) for item in value)))
        else:
            facts.append(SubjectFact(label, str(value)))
    return facts


# --------------------------------------------------------------------------------------------
# Audit events
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditRow:
    event: AuditEvent
    details: list[tuple[str, str]]
    run_url: str


def audit_rows(events: Iterable[AuditEvent]) -> list[AuditRow]:
    """Each event with its details as readable ``(key, value)`` lines and a link to its run."""
    return [
        AuditRow(event=event, details=detail_lines(event.data), run_url=_run_url(event))
        for event in events
    ]


def detail_lines(data: Any) -> list[tuple[str, str]]:
    """Top-level keys of an event's ``data`` in order, scalars as text, lists of scalars joined
    with commas, anything nested as compact JSON (exact, as the JSON export has it)."""
    if not isinstance(data, dict):
        return [("data", _text(data))] if data not in (None, "", [], {}) else []
    return [(str(key), _text(value)) for key, value in data.items()]


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return ", ".join(str(item) for item in value) if value else "none"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def _run_url(event: AuditEvent) -> str:
    """Run events name their run as the object; victim events carry it in ``data``."""
    run_id: Any = None
    if event.object_type == "run":
        run_id = event.object_id
    elif isinstance(event.data, dict):
        run_id = event.data.get("run")
    if isinstance(run_id, int) or (isinstance(run_id, str) and is_whole_number(run_id)):
        return reverse("run-detail", kwargs={"pk": int(run_id)})
    return ""
