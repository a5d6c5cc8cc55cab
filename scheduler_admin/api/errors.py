"""One error body for every failure, and the mapping of domain errors to HTTP statuses.

Every error response is ``{"detail": str, "code": str, "errors": {field: [messages]}}``
(``errors`` empty when no field is at fault). Services raise domain exceptions; this handler turns
them into 400 (``ConfigErrors``, ``IngestErrors``), 404 (``NotFound``), 409 (``StaleVersion``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from preemption.hierarchy import ConfigErrors
from scheduler_admin.cluster.services import IngestErrors
from scheduler_admin.enforcement.evictions import OrderNotFound
from scheduler_admin.enforcement.timers import TimerNotFound
from scheduler_admin.queues.services import NotFound, StaleVersion


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object changed since you read it."
    default_code = "stale_version"


def error_body(detail: str, code: str, errors: dict[str, list[str]] | None = None) -> dict:
    return {"detail": detail, "code": code, "errors": errors or {}}


def config_errors_body(exc: ConfigErrors) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        errors.setdefault(error.location, []).append(error.message)
    return errors


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ConfigErrors):
        return Response(
            error_body("The configuration is not valid.", "invalid", config_errors_body(exc)),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, IngestErrors):
        return Response(
            error_body("The cluster state is not valid.", "invalid", exc.errors),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, StaleVersion):
        body = error_body(str(exc), "stale_version")
        body["current_version"] = exc.current
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, NotFound | Http404 | TimerNotFound | OrderNotFound):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body("The request is not valid.", "invalid", _flatten(data))
    else:
        detail = data.get("detail", "") if isinstance(data, dict) else str(data)
        code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
        response.data = error_body(str(detail), str(code))
    return response


def _flatten(data: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error structure as ``{"field.sub[0]": [messages]}``."""
    if isinstance(data, dict):
        result: dict[str, list[str]] = {}
        for key, value in data.items():
            name = str(key) if key != "non_field_errors" else "non_field_errors"
            result.update(_flatten(value, f"{prefix}.{name}" if prefix else name))
        return result
    if isinstance(data, list) and data and all(isinstance(item, str) for item in data):
        return {prefix or "non_field_errors": [str(item) for item in data]}
    if isinstance(data, list):
        result = {}
        for index, item in enumerate(data):
            result.update(_flatten(item, f"{prefix}[{index}]"))
        return result
    return {prefix or "non_field_errors": [str(data)]}


def api_not_found(request, exception=None):
    """A URL that matches no route: JSON for ``/api/`` clients, Django's page elsewhere."""
    from django.http import JsonResponse
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        return JsonResponse(error_body("No such endpoint.", "not_found"), status=404)
    return page_not_found(request, exception)


def api_server_error(request):
    """An unexpected failure: the same JSON body for API clients (never an HTML page)."""
    from django.http import JsonResponse
    from django.views.defaults import server_error

    if request.path.startswith("/api/"):
        return JsonResponse(error_body("Internal error.", "server_error"), status=500)
    return server_error(request)
