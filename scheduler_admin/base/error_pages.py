"""The console's error pages: 403 and 404 in the console's layout, saying why and offering a
way back (the root URL conf's handlers send ``/api/`` paths to JSON instead, see
``api.errors``). The 400 and 500 pages are rendered without the request: it may be what is
broken (a 400 can come before the user is known), and the page must not fail in turn. 500 shows
no details.

A domain error a console view lets through (``base.errors``) is answered here, once, by
``DomainErrorPages``: stale or conflict 409, invalid 400, too large 413, each a page saying why;
not found and forbidden, being Django's ``Http404`` and ``PermissionDenied``, reach Django's
handlers, which render the 404 and 403 pages above. Views that can do better (a form showing a
stale save's message beside the field) catch the error themselves.

An expected refusal is not a bug: ``QuietRefusals`` keeps the traceback out of the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.template import loader
from django.utils.http import url_has_allowed_host_and_scheme

from scheduler_admin.base import errors


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """403: the reason the check gave ("This action needs the admin role.")."""
    return _page(request, "403.html", 403, reason=reason_of(exception))


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: the view's own message ("Partition default has no queue root.x."), or none for a URL
    that matches no page (the resolver's message is a dict of the patterns it tried)."""
    return _page(request, "404.html", 404, reason=reason_of(exception), path=request.path)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """400: a request Django could not read; ``400.html`` without the request's context."""
    return HttpResponseBadRequest(loader.get_template("400.html").render())


def reason_of(exception: Exception | None) -> str:
    """The message an exception was raised with, when it is plain text meant for the reader."""
    args = getattr(exception, "args", ())
    return args[0] if args and isinstance(args[0], str) else ""


def _page(request: HttpRequest, template: str, status: int, **context: str) -> HttpResponse:
    return render(request, template, {**context, "back_url": _back_url(request)}, status=status)


def _back_url(request: HttpRequest) -> str:
    """The page the reader came from (the form they sent, the link they followed), if it is
    one of ours and not this very address; else "" (the page links to the dashboard only)."""
    referer = request.headers.get("Referer", "")
    if not referer or referer == request.build_absolute_uri():
        return ""
    ours = url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return referer if ours else ""


#: The page of each domain error kind that is neither a 404 nor a 403: status and heading.
_REFUSAL_PAGES: tuple[tuple[type[errors.DomainError], int, str], ...] = (
    (errors.Stale, 409, "Changed meanwhile"),
    (errors.Conflict, 409, "Not possible now"),
    (errors.Invalid, 400, "Not accepted"),
    (errors.TooLarge, 413, "Too large"),
)


class DomainErrorPages:
    """The console's one mapping of domain errors to pages (the API has its exception handler;
    ``/api/`` paths are left to it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, errors.DomainError) or request.path.startswith("/api/"):
            return None
        # NotFound and Forbidden are Django's Http404 and PermissionDenied: Django's own
        # handlers (handler404/403, the pages above) answer them, and log them as it always did.
        for kind, status, heading in _REFUSAL_PAGES:
            if isinstance(exception, kind):
                return _page(
                    request, "refused.html", status, reason=reason_of(exception),
                    heading=heading, status_code=str(status),
                )  # fmt: skip
        return None


class QuietRefusals(logging.Filter):
    """On ``django.request``: a 4xx record keeps its one line but loses its traceback.

    Django logs every ``PermissionDenied`` (and a body it cannot parse) with ``exc_info``, so a
    viewer pressing an admin's button filled the log with a traceback. Such a refusal is the
    expected answer, not a failure; 5xx records keep their traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
