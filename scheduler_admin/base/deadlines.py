"""The request deadline (``REQUEST_DEADLINE``, see ``scheduler_admin.base.timeouts``).

``DeadlineMiddleware`` starts the clock of each request; the long paths call ``check(doing)``
between their steps (after reading a config, after validating it, after previewing it, and
before the transaction that saves it), and past the deadline ``check`` raises
``RequestTimedOut``: 503 with the API's error body (``code: "timeout"``) on the API, a page in
the console. Nothing has been written when it is raised, so nothing is saved. Outside a request
(the CLI, Celery) there is no deadline and ``check`` does nothing.

Cooperative rather than a signal that interrupts whatever runs: a check runs only where
stopping is safe, never inside a transaction or after a commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework import status
from rest_framework.exceptions import APIException

#: The ``time.monotonic()`` at which the current request's deadline passes; None: no deadline.
_deadline: ContextVar[float | None] = ContextVar("request_deadline", default=None)


class RequestTimedOut(APIException):
    """The request ran past ``REQUEST_DEADLINE`` and stopped before writing anything."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "timeout"

    def __init__(self, doing: str) -> None:
        seconds = settings.REQUEST_DEADLINE
        super().__init__(
            f"The request was stopped after {seconds} s (REQUEST_DEADLINE) while {doing}; "
            "nothing was saved. Try again when the server is less busy, or raise "
            "REQUEST_DEADLINE and WEB_TIMEOUT."
        )


def check(doing: str) -> None:
    """Raise ``RequestTimedOut`` when the current request is past its deadline. ``doing`` says
    what it was doing (``"validating the config"``). Call it only where nothing is written yet."""
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise RequestTimedOut(doing)


class DeadlineMiddleware:
    """Start each request's deadline; a console page that ran past it answers 503 with a page
    (API views answer through their own exception handler, with the JSON error body)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _deadline.set(time.monotonic() + settings.REQUEST_DEADLINE)
        try:
            return self.get_response(request)
        finally:
            _deadline.reset(token)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, RequestTimedOut):
            return None
        if request.path.startswith("/api/"):
            from scheduler_admin.base.api.errors import error_body  # imports the services

            return JsonResponse(
                error_body(str(exception.detail), "timeout"), status=exception.status_code
            )
        return render(
            request,
            "503.html",
            {"reason": str(exception.detail)},
            status=exception.status_code,
        )
