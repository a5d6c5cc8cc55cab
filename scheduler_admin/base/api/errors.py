"""One error body for every failure, and the mapping of domain errors to HTTP statuses.

Every error response is ``{"detail": str, "code": str, "errors": {field: [messages]}}``
(``errors`` empty when no field is at fault). Services raise the domain error kinds of
``base.errors``; this handler is the one place the API maps them, knowing no app: 400
(``Invalid``, the engine's ``ConfigErrors``, a malformed body), 403 (``Forbidden``, with its
reason), 404 (``NotFound``), 409 (``Stale`` with ``current_version``; ``Conflict`` with its
code), 413 (a body over ``REQUEST_MAX_BYTES``, a ``TooLarge`` config over ``CONFIG_MAX_BYTES``),
503 with ``Retry-After`` (a write PostgreSQL still ended as a deadlock or
serialization victim after the service's own attempts, ``lock_order.retry_on_conflict``: the
client may send it again; never a 500). A browser that navigates to the API without signing in
is redirected to the sign-in page instead of a 401.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import Http404, HttpResponseBase, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from preemption.config import shown
from preemption.hierarchy import ConfigErrors
from scheduler_admin.base.api.browsable import wants_page
from scheduler_admin.base.api.exceptions import ErrorWithFields
from scheduler_admin.base.errors import Conflict as DomainConflict
from scheduler_admin.base.errors import Invalid, NotFound, Stale, TooLarge
from scheduler_admin.base.lock_order import is_write_conflict


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object changed since you read it."
    default_code = "stale_version"


def error_body(detail: str, code: str, errors: dict[str, list[str]] | None = None) -> dict:
    return {"detail": detail, "code": code, "errors": errors or {}}


def config_errors_body(exc: ConfigErrors) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        errors.setdefault(error.location, []).append(shown(error.message))
    return errors


#: Django's refusals of a request it cannot read, raised when a view reads the body.
_REQUEST_REFUSALS: dict[type[Exception], tuple[int, str, str]] = {
    RequestDataTooBig: (413, "too_large", "The request body is over REQUEST_MAX_BYTES."),
    TooManyFieldsSent: (400, "invalid", "The form has more fields than REQUEST_MAX_FIELDS."),
    TooManyFilesSent: (400, "invalid", "The form has too many files."),
}


def exception_handler(exc: Exception, context: dict[str, Any]) -> HttpResponseBase | None:
    request = context.get("request")
    if isinstance(exc, exceptions.NotAuthenticated) and request and wants_page(request):
        # A browser without a session, on the browsable API or the docs: sign in first, as on
        # every console page. API clients get the 401.
        return redirect_to_login(request.get_full_path())
    if isinstance(exc, ConfigErrors) and isinstance(exc, TooLarge):
        return Response(
            error_body("The configuration is too large.", "too_large", config_errors_body(exc)),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, ConfigErrors):
        return Response(
            error_body("The configuration is not valid.", "invalid", config_errors_body(exc)),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, ErrorWithFields):
        return Response(
            error_body(str(exc.detail), str(exc.default_code), exc.errors), status=exc.status_code
        )
    for kind, (code, name, detail) in _REQUEST_REFUSALS.items():
        if isinstance(exc, kind):
            return Response(error_body(detail, name, {"body": [detail]}), status=code)
    if isinstance(exc, Invalid):
        return Response(
            error_body(exc.detail, "invalid", exc.errors), status=status.HTTP_400_BAD_REQUEST
        )
    if is_write_conflict(exc):
        response = Response(
            error_body("The write met a concurrent one and was not saved; send it again.", "busy"),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
        response["Retry-After"] = "1"
        return response
    if isinstance(exc, Stale):
        body = error_body(str(exc), "stale_version")
        body["current_version"] = exc.current
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DomainConflict):
        return Response(error_body(str(exc), exc.code), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, NotFound | Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, DjangoPermissionDenied):  # keep the reason (``permissions.require``)
        reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else None
        exc = exceptions.PermissionDenied(reason)
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
            if isinstance(key, int):  # an item of a list (DRF keys list errors by index)
                path = f"{prefix}[{key}]"
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            result.update(_flatten(value, path))
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
    """A URL that matches no route: JSON for ``/api/`` clients, the console's page elsewhere."""
    from scheduler_admin.base.error_pages import not_found

    if request.path.startswith("/api/"):
        return JsonResponse(error_body("No such endpoint.", "not_found"), status=404)
    return not_found(request, exception)


def api_forbidden(request, exception=None):
    """A ``PermissionDenied`` outside DRF's views (which answer their own): JSON with the reason
    for ``/api/`` clients, the console's page elsewhere."""
    from scheduler_admin.base.error_pages import forbidden, reason_of

    if request.path.startswith("/api/"):
        detail = reason_of(exception) or "You do not have permission to perform this action."
        return JsonResponse(error_body(detail, "permission_denied"), status=403)
    return forbidden(request, exception)


def api_bad_request(request, exception=None):
    """A request Django refused before any view ran (``SuspiciousOperation``, ``BadRequest``):
    the JSON error body for ``/api/`` clients, the console's page elsewhere."""
    from scheduler_admin.base.error_pages import bad_request

    if request.path.startswith("/api/"):
        if isinstance(exception, RequestDataTooBig):
            detail = "The request body is over REQUEST_MAX_BYTES."
            return JsonResponse(error_body(detail, "too_large", {"body": [detail]}), status=413)
        detail = "The request cannot be read."
        if isinstance(exception, SuspiciousOperation | TooManyFieldsSent):
            detail = f"The request cannot be read: {exception}"
        return JsonResponse(error_body(detail, "invalid", {"request": [detail]}), status=400)
    return bad_request(request, exception)


def api_server_error(request):
    """An unexpected failure: the same JSON body for API clients (never an HTML page); the
    console's ``500.html`` elsewhere, without details."""
    from django.views.defaults import server_error

    if request.path.startswith("/api/"):
        return JsonResponse(error_body("Internal error.", "server_error"), status=500)
    return server_error(request)
