"""Console forms take no query parameters they do not define: a POST whose address carries one
is refused with a page naming it, and nothing is saved (SPEC 7's strict previews, for the
console).

The console's forms send everything in their body: Preview and Save are the ``action`` field of
the queue page's form, a comment is a field, and the form's address is the page's own, without
a query string. A POST whose address has a query parameter therefore did not come from one of
our forms as they are (a hand-made link, a script, an edited address such as
``.../queues/root.a/?dry_run=true``), and the parameter would be ignored: a "preview" that
saves. The guard answers such a POST with a 400 page that names each parameter and says that
nothing was saved, before the view runs. A view that does read a query parameter on POST declares
it with ``takes_query`` (the timer's Cancel page reads ``next``, the page to go back to).

GET requests are not concerned (a page's filters and tabs are its query), nor ``/api/`` (its
own contract, ``scheduler_admin.base.api.query``) and ``/admin/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from scheduler_admin.base.error_pages import _back_url

_View = TypeVar("_View", bound=Callable[..., Any])
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_NOT_CONSOLE = ("/api/", "/admin/")
#: A parameter name longer than this is named by its start only.
_SHOWN = 80


def takes_query(*names: str) -> Callable[[_View], _View]:
    """Declare the query parameters a console view reads on POST (none by default)."""

    def declare(view: _View) -> _View:
        view.form_query_parameters = frozenset(names)  # type: ignore[attr-defined]
        return view

    return declare


class FormQueryGuardMiddleware:
    """Refuses a console POST (PUT, PATCH, DELETE) whose query string has a parameter its view
    does not declare (module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable, args: Iterable[Any], kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        if request.method in _SAFE_METHODS or request.path_info.startswith(_NOT_CONSOLE):
            return None
        declared = getattr(view, "form_query_parameters", frozenset())
        unknown = [name for name in request.GET if name not in declared]
        if not unknown:
            return None
        shown = [name if len(name) <= _SHOWN else name[:_SHOWN] + "…" for name in unknown]
        # Back to the page the form is on: the referring page, else this address without its
        # query string (the form's own page).
        back = _back_url(request) or request.path
        context = {"names": shown, "declared": sorted(declared), "back_url": back}
        return render(request, "errors/unknown_query.html", context, status=400)
