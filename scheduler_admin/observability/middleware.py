"""The request's log context: a request id, and the partition and run the URL names.

First in ``MIDDLEWARE``, so every answer carries ``X-Request-ID``, the guard's refusals and
HTTPS redirects included. A request id sent by the client or a proxy (``X-Request-ID``) is kept
when it is sane (``REQUEST_ID``: up to 128 letters, digits and ``.-_:``), so a line of the proxy's
log and the product's lines of the same request share it; anything else gets a new id, so a
client cannot write arbitrary text into the logs through it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse

from scheduler_admin.base.logging import bind, start_request

HEADER = "X-Request-ID"
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
#: URL names whose ``pk`` is a run's id (console pages and API).
_RUN_URLS = ("run-", "api-run-")


def request_id_of(request: HttpRequest) -> str:
    """The client's ``X-Request-ID`` when it is sane, else a new random one."""
    given = request.headers.get(HEADER, "")
    return given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


class RequestContextMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request)
        request.request_id = request_id  # type: ignore[attr-defined]
        start_request(request, request_id=request_id)  # ends with request_finished (apps.py)
        response = self.get_response(request)
        response[HEADER] = request_id
        return response

    def process_view(
        self,
        request: HttpRequest,
        view: Callable[..., Any],
        args: Iterable[Any],
        kwargs: dict[str, Any],
    ) -> None:
        """Name the partition and the run the URL is about, for the rest of the request."""
        fields: dict[str, object] = {}
        if isinstance(kwargs.get("partition"), str):
            fields["partition"] = kwargs["partition"]
        match = request.resolver_match
        url_name = (match.url_name or "") if match else ""
        pk = kwargs.get("pk")
        if isinstance(pk, str) and pk.isascii() and pk.isdigit() and len(pk) < 19:
            pk = int(pk)  # a re_path's group
        if url_name.startswith(_RUN_URLS) and isinstance(pk, int):
            fields["run_id"] = pk
        if fields:
            bind(**fields)
