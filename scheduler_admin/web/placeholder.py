"""Temporary: a page that is being built answers 501 until its package replaces this view."""

from django.http import HttpRequest, HttpResponse


def not_built(request: HttpRequest, **kwargs: object) -> HttpResponse:
    return HttpResponse("This page is not built yet.", status=501, content_type="text/plain")
