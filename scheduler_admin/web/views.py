"""Console views that belong to no page family. The pages live in their packages
(``scheduler_admin.web.<pkg>``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET


@login_not_required
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and compose health checks: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
