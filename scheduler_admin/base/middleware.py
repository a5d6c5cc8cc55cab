"""The request guard: input no view should ever see is refused here, before any view runs.

Every request, API and console alike, is checked for:

1. **Size**: a ``Content-Length`` over ``REQUEST_MAX_BYTES`` is a 413 before a byte of the body
   is read (Django's own check, ``DATA_UPLOAD_MAX_MEMORY_SIZE``, is set to the same value, so it
   never answers first with its HTML 400). A ``Content-Length`` that is not a number is a 400.
   A URL (path and query string as sent) over ``limits.URL_MAX_BYTES`` is a 414.
2. **Unstorable text**: a NUL character (PostgreSQL text cannot hold it, so it fails as a
   database error wherever it is compared or stored) in a header is a 400; in the URL path it
   is a 400 on the API and a 404 on pages (no page has such a name); in the query string or a
   form field it is a 400 naming the parameter on the API and the admin site. Console pages get
   those values in their forms, which show an inline message ("Null characters are not
   allowed"), and their filters match nothing. Unpaired surrogates cannot arrive this way
   (Django decodes URLs and forms with replacement characters) but are treated alike. Too many
   form or query fields (``REQUEST_MAX_FIELDS``) is a 400.
3. **JSON bodies of API views that do not parse with** ``api.parsers.SafeJSONParser`` (a view
   with its own parser): the body is checked with the same rules (depth, NUL, surrogates) in
   ``process_view``, so no API view can receive what the safe parser would refuse.

Answers are the API's JSON error body on ``/api/`` paths and a plain-text 400/413 elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound, JsonResponse
from django.http.multipartparser import MultiPartParserError

from preemption.config import shown, text_problem
from scheduler_admin.base import limits
from scheduler_admin.base.api.errors import error_body
from scheduler_admin.base.api.exceptions import ErrorWithFields

#: Headers never compared with stored text: not worth a check per request.
_SKIPPED_HEADERS = frozenset({"HTTP_USER_AGENT", "HTTP_ACCEPT", "HTTP_ACCEPT_LANGUAGE"})
#: Where query and form values are refused here rather than by the page's own forms.
_STRICT_PREFIXES = ("/api/", "/admin/")


class RequestGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = self._size_refusal(request) or self._text_refusal(request)
        if refusal is not None:
            return refusal
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable, args: Iterable[Any], kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        """Check a JSON body the view's own parser would not check (see the module docstring)."""
        if not _is_json(request) or not _needs_json_check(view):
            return None
        from scheduler_admin.base.api.parsers import load_json

        try:
            load_json(request.body)
        except ErrorWithFields as exc:
            return _refuse(request, exc.status_code, str(exc.detail), exc.errors)
        return None

    def _size_refusal(self, request: HttpRequest) -> HttpResponse | None:
        url_bytes = len(request.META.get("PATH_INFO", "")) + len(
            request.META.get("QUERY_STRING", "")
        )
        if url_bytes > limits.URL_MAX_BYTES:
            message = f"the URL is {url_bytes} bytes, over the {limits.URL_MAX_BYTES}-byte limit"
            return _refuse(request, 414, "The URL is too long.", {"url": [message]})
        raw = request.META.get("CONTENT_LENGTH") or "0"
        if not raw.isascii() or not raw.strip().isdigit():
            return _refuse(request, 400, "Content-Length is not a number.", {"Content-Length": [
                "must be the length of the body in bytes"]})  # fmt: skip
        size, limit = int(raw), settings.REQUEST_MAX_BYTES
        if size > limit:
            message = f"the body is {size} bytes, over the {limit}-byte limit (REQUEST_MAX_BYTES)"
            return _refuse(request, 413, "The request body is too large.", {"body": [message]})
        return None

    def _text_refusal(self, request: HttpRequest) -> HttpResponse | None:
        errors: dict[str, list[str]] = {}
        for name, value in request.META.items():
            if name.startswith("HTTP_") and name not in _SKIPPED_HEADERS:
                _check(errors, name[5:].replace("_", "-").title(), value)
        strict = request.path_info.startswith(_STRICT_PREFIXES)
        if text_problem(request.path_info):
            if not strict:  # no page has such a name
                return HttpResponseNotFound(
                    "Not found: no page has this name.\n", content_type="text/plain; charset=utf-8"
                )
            _check(errors, "path", request.path_info)
        try:
            for data in (request.GET, request.POST) if request.method == "POST" else (request.GET,):
                for name, values in data.lists():
                    if strict:
                        _check(errors, "parameter name", name)
                        for value in values:
                            _check(errors, name, value)
        except RequestDataTooBig:
            return self._size_refusal(request) or _refuse(
                request, 413, "The request body is too large.", {"body": ["too large"]}
            )
        except (TooManyFieldsSent, TooManyFilesSent) as exc:
            return _refuse(request, 400, "The request has too many fields.", {"request": [
                f"{exc} (REQUEST_MAX_FIELDS)"]})  # fmt: skip
        except MultiPartParserError as exc:
            return _refuse(request, 400, "The form cannot be read.", {"body": [str(exc)]})
        if errors:
            return _refuse(request, 400, "The request holds text that cannot be stored.", errors)
        return None


def _check(errors: dict[str, list[str]], name: str, value: object) -> None:
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            errors.setdefault(shown(name), []).append(problem)


def _is_json(request: HttpRequest) -> bool:
    kind = request.content_type or ""
    return (kind == "application/json" or kind.endswith("+json")) and bool(
        request.META.get("CONTENT_LENGTH")
    )


def _needs_json_check(view: Callable) -> bool:
    """True for a DRF view whose parsers include a JSON parser that is not the safe one."""
    from rest_framework.parsers import JSONParser

    from scheduler_admin.base.api.parsers import SafeJSONParser

    cls = getattr(view, "cls", None)
    parsers = getattr(cls, "parser_classes", None) or ()
    return any(
        issubclass(parser, JSONParser) and not issubclass(parser, SafeJSONParser)
        for parser in parsers
    )


def _refuse(
    request: HttpRequest, status: int, detail: str, errors: dict[str, list[str]]
) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        code = "too_large" if status in (413, 414) else "invalid"
        return JsonResponse(error_body(detail, code, errors), status=status)
    lines = [detail, *(f"{name}: {'; '.join(messages)}" for name, messages in errors.items())]
    return HttpResponse(
        "\n".join(lines) + "\n", status=status, content_type="text/plain; charset=utf-8"
    )
