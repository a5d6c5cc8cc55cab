"""DRF's browsable API, for people signed in to the console only.

The HTML renderer (``BrowsableAPIRenderer``, listed after JSON so clients that do not ask for
HTML get JSON) is offered only to a request whose browser session is signed in. Everyone else
gets JSON whatever they ``Accept``: an anonymous visitor never sees a page describing the API
(a browser navigating to it is sent to the sign-in page, ``errors.exception_handler``), and
token clients keep the JSON they parse.

Roles and CSRF are the API's own, as for the console: the page shows a form only for the
methods the user's role allows (DRF asks the view's permissions), the form's request goes
through the same permission checks, and a session-authenticated write needs the CSRF token
(DRF's ``SessionAuthentication``), which the page sends.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer
from rest_framework.request import Request


def wants_page(request: Any) -> bool:
    """A browser navigating to the URL (a GET that accepts HTML), as opposed to an API client."""
    accept = request.headers.get("Accept", "")
    return request.method in {"GET", "HEAD"} and "text/html" in accept


class SignedInBrowsableNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        if _session_signed_in(request):
            return super().select_renderer(request, renderers, format_suffix)
        offered = [r for r in renderers if not isinstance(r, BrowsableAPIRenderer)] or renderers
        try:
            return super().select_renderer(request, offered, format_suffix)
        except NotAcceptable:
            if len(offered) == len(renderers):
                raise
            # Only the page would have suited: the JSON answer (usually a 401 or a redirect).
            return offered[0], offered[0].media_type


def _session_signed_in(request: Request) -> bool:
    """The console's session user (Django's ``AuthenticationMiddleware``), read without running
    DRF's authentication, which has not happened yet when the format is chosen."""
    user = getattr(request._request, "user", None)
    return bool(user is not None and user.is_authenticated)
