"""The glossary page: every term a plan's explanation uses, each with an anchor the run page, the
change preview and the simulator link to (``web.explanations.glossary_url``). Readable by every
signed-in user, like every console page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from scheduler_admin.web.glossary import content


@require_safe
def glossary(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "web/glossary/glossary.html",
        {
            "laws": content.LAWS,
            "fences": content.FENCES,
            "reasons": content.reason_entries(),
            "outcomes": content.outcome_entries(),
            "policies": content.policy_entries(),
        },
    )
