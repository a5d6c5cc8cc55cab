"""The documentation site under ``/docs/``, for signed-in users.

How a user of an offline console reaches the docs: ``make docs`` (and ``make run``, and the
image's build) turn ``docs/`` into a static site in ``site/`` (``settings.DOCS_SITE_DIR``), and
this view serves its files behind sign-in like every console page (``LoginRequiredMiddleware``),
with the console's Content-Security-Policy: the site's theme runs no inline script
(``docs-theme/overrides``). Nothing is fetched from elsewhere, so the Help links work on a
machine without network. A checkout where the site was never built answers each page with a
console page that says how to build it and where the page's Markdown source is, instead of a
bare 404.

Files are read from disk on each request (the site is small and rarely read; no cache to go
stale after ``make docs``); ``safe_join`` keeps every path inside the site.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils._os import safe_join
from django.views.decorators.http import require_safe


@require_safe
def docs_page(request: HttpRequest, page: str = "") -> HttpResponse:
    """A file of the built site: ``/docs/how-to/api-tokens/`` is ``how-to/api-tokens/index.html``;
    a directory without its slash is redirected to it, as a static web server does."""
    root = Path(settings.DOCS_SITE_DIR)
    if not (root / "index.html").is_file():
        return _not_built(request, page)
    try:
        target = Path(safe_join(root, page))
    except SuspiciousFileOperation as exc:  # a path that leaves the site
        raise Http404("No documentation page has this address.") from exc
    if target.is_dir():
        if page and not page.endswith("/"):
            return HttpResponseRedirect(f"{request.path}/")
        target = target / "index.html"
    if not target.is_file():
        raise Http404("No documentation page has this address.")
    content_type, encoding = mimetypes.guess_type(target.name)
    response = FileResponse(
        target.open("rb"), content_type=content_type or "application/octet-stream"
    )
    if encoding:
        response.headers["Content-Encoding"] = encoding
    # Each signed-in user's copy only; a rebuilt site is seen at the next load.
    response.headers["Cache-Control"] = "private, no-cache"
    return response


def _not_built(request: HttpRequest, page: str) -> HttpResponse:
    source = page.strip("/")
    source = f"docs/{source}.md" if source else "docs/index.md"
    return render(request, "web/help/not_built.html", {"source": source}, status=404)
