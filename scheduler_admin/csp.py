"""Content-Security-Policy on every page (issue 16, part "auth").

The policy allows scripts, styles, fonts, images and fetches from the product's own origin only,
and no inline script at all: every script of the console, the browsable API and the API docs is
a static file (``static/``), none has an inline event handler, and Swagger UI's start-up script
is served from ``/api/docs/?script``. An injected ``<script>`` or ``onclick=`` does not run.

Two allowances, each for a named reason:

- ``style-src-attr 'unsafe-inline'``: the usage bars draw data (``style="width: 37.5%"``), the
  dashboard indents the tree by depth (``style="--level: 3"``) and DRF's browsable API has a few
  ``style=`` attributes. A style attribute cannot run script; ``<style>`` elements and
  stylesheets of other origins stay refused (``style-src 'self'``).
- ``img-src data:``: Swagger UI draws its icons as ``data:`` SVG images.

The header goes on documents only (HTML, and SVG, which can carry script): a PDF, CSV or JSON
answer does not need it, and Chromium's PDF viewer refuses a PDF whose own policy forbids
plugins. ``CONTENT_SECURITY_POLICY`` (setting) is the policy; a view that set its own header
keeps it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

#: The console's policy (``settings.CONTENT_SECURITY_POLICY`` is built from it).
DEFAULT_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
#: Answers that are documents a browser renders with the policy.
DOCUMENT_TYPES = ("text/html", "image/svg+xml")


def header_value(policy: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in policy.items())


class ContentSecurityPolicyMiddleware:
    """Adds ``Content-Security-Policy`` to HTML and SVG answers (static files included: place it
    above WhiteNoise)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.value = header_value(settings.CONTENT_SECURITY_POLICY)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        content_type = response.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type in DOCUMENT_TYPES and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.value
        return response
