"""The audit page's "Verify the record": the same check as ``GET /api/v1/audit/verify``
(``audit.chain.verify``), shown in words: the chain holds, up to which event and head, or the
first broken link and what is wrong with it.

A GET page, since it changes nothing (no CSRF token needed, and the browser may reload it).
It reads every event of every partition, so, like the API, it is for global roles (viewer and
above); a queue grant's holder reads only their subtrees' events and gets a 403 with the
reason. The optional ``head`` (an ``Audit-Chain-Head`` an earlier export carried) is checked
too; a malformed one is explained next to its field.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from scheduler_admin.accounts.permissions import READ
from scheduler_admin.audit import chain
from scheduler_admin.web.common import require

#: The problems of a broken link, in words (``chain.Break.problem``).
PROBLEMS = {
    chain.CHANGED: "An event was changed after it was written.",
    chain.REMOVED: "An event was removed.",
    chain.INSERTED: "An event was inserted that is not part of the chain.",
    chain.UNSEALED: "An event was never sealed into the chain.",
    chain.HEAD_MISMATCH: "A head is not a link of the chain any more.",
}


@require_safe
def audit_verify(request: HttpRequest) -> HttpResponse:
    """Without ``?run=1``: the page with its button. With it: walk the chain and say what it
    found."""
    require(request.user, READ, None)
    raw_head = request.GET.get("head", "").strip()
    head_error = ""
    verdict = None
    heads: list[tuple[int, str]] = []
    if raw_head:
        try:
            heads.append(chain.parse_head(raw_head))
        except chain.BadHead as exc:
            head_error = str(exc)
    if request.GET.get("run") and not head_error:
        verdict = chain.verify(expected_heads=heads)
    problem = ""
    if verdict is not None and verdict.first_break is not None:
        problem = PROBLEMS.get(verdict.first_break.problem, verdict.first_break.problem)
    return render(
        request,
        "web/activity/audit_verify.html",
        {"verdict": verdict, "problem": problem, "head": raw_head, "head_error": head_error},
    )
