"""A plan's candidates in bounded answers: the first ones inline, a summary of all of them.

A plan can explain 100,000 candidates: listed inline, a run's answer (``runs/{id}/``) or a
preview (``?dry_run=true``) was 60-70 MB, built in seconds and held whole in the worker. So an
answer lists at most ``INLINE_EXPLANATIONS`` of them (by candidate id, as before), and says how
many there are (``explanation_count``) and how many per decision and reason
(``explanation_summary``). The rest are a run's ``runs/{id}/candidates/`` pages and its
exports; a preview lists them all on request (``?explanations=all``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Count, QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from preemption.model import Explanations, Plan
from scheduler_admin.enforcement.models import RunCandidate

#: Explanations listed inline in a run's answer or a preview's plan (the API's largest page).
INLINE_EXPLANATIONS = 1000


def summary(pairs: Iterable[tuple[bool, str]]) -> list[dict[str, Any]]:
    """Counts per (accepted, reason) of ``(accepted, reason)`` pairs: taken first, then by
    reason, so the same candidates always read the same."""
    return summary_of_counts(Counter(pairs))


def plan_summary(plan: Plan) -> list[dict[str, Any]]:
    """``summary`` of a plan's explanations, from its verdicts (the records repeat them): for
    the policy's own map (``Explanations``), the reasons are counted in one pass at C speed and
    only the victims are moved to "taken", instead of a pair made per candidate (95,000 for a
    big tenant's preview)."""
    explanations = plan.explanations
    if not isinstance(explanations, Explanations):
        return summary((item.accepted, str(item.reason)) for item in explanations)
    reasons = explanations.reasons
    pairs: Counter[tuple[bool, str]] = Counter()
    for reason, count in Counter(reasons.values()).items():
        pairs[(False, str(reason))] = count
    for candidate in explanations.accepted:
        reason = str(reasons[candidate])
        pairs[(False, reason)] -= 1
        pairs[(True, reason)] += 1
    return summary_of_counts({pair: count for pair, count in pairs.items() if count})


def summary_of_counts(counts: Mapping[tuple[bool, str], int]) -> list[dict[str, Any]]:
    """``summary``'s list of already counted pairs."""
    return [
        {"accepted": accepted, "reason": reason, "count": count}
        for (accepted, reason), count in sorted(
            counts.items(), key=lambda kv: (not kv[0][0], kv[0][1])
        )
    ]


def stored_summary(candidates: QuerySet[RunCandidate]) -> list[dict[str, Any]]:
    """``summary`` of a run's stored candidates, counted by the database (one ``GROUP BY``)."""
    rows = candidates.order_by().values_list("accepted", "reason").annotate(count=Count("id"))
    return [
        {"accepted": accepted, "reason": reason, "count": count}
        for accepted, reason, count in sorted(rows, key=lambda row: (not row[0], row[1]))
    ]


#: ``?explanations=all`` on a preview (a dry run, ``simulate``): every candidate inline.
EXPLANATIONS = "explanations"
EXPLANATIONS_PARAMETER = OpenApiParameter(
    EXPLANATIONS,
    {"type": "string", "enum": ["first", "all"]},
    description=f"`first` (the default): each plan lists its first {INLINE_EXPLANATIONS:,} "
    "candidates' explanations by candidate id, with `explanation_count` and "
    "`explanation_summary` covering all of them; `all`: every explanation, however many.",
)


def every_explanation(request: Request) -> bool:
    """True when a preview's request asks for every candidate's explanation inline (the
    schema check, ``api.query``, has already refused any value but ``first`` and ``all``)."""
    return request.query_params.get(EXPLANATIONS) == "all"
