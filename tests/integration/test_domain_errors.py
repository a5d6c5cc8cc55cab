"""The domain error kinds (``base.errors``) are mapped once by each interface: the API's
exception handler answers each with its status and the one error body, the console's
``DomainErrorPages`` with a page saying why; and every app error is one of the kinds."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import RequestFactory
from rest_framework.test import APIRequestFactory

from scheduler_admin.base import errors
from scheduler_admin.base.api.errors import exception_handler
from scheduler_admin.base.error_pages import DomainErrorPages


def api_answer(exc: Exception) -> tuple[int, dict]:
    request = APIRequestFactory().get("/api/v1/partitions/")
    response = exception_handler(exc, {"request": request})
    assert response is not None
    return response.status_code, json.loads(json.dumps(response.data))


@pytest.mark.parametrize(
    ("exc", "status", "body"),
    [
        (
            errors.NotFound("Partition default has no timer 7."),
            404,
            {"detail": "Partition default has no timer 7.", "code": "not_found", "errors": {}},
        ),
        (
            errors.Stale("Version 3 was saved since.", current=3),
            409,
            {
                "detail": "Version 3 was saved since.",
                "code": "stale_version",
                "errors": {},
                "current_version": 3,
            },
        ),
        (
            errors.Conflict("The run already ended.", code="run_not_active"),
            409,
            {"detail": "The run already ended.", "code": "run_not_active", "errors": {}},
        ),
        (
            errors.Invalid({"nodes[0].name": ["This field is required."]}),
            400,
            {
                "detail": "The request is not valid.",
                "code": "invalid",
                "errors": {"nodes[0].name": ["This field is required."]},
            },
        ),
        (
            errors.Invalid("A grant needs a user or a group.", field="user"),
            400,
            {
                "detail": "The request is not valid.",
                "code": "invalid",
                "errors": {"user": ["A grant needs a user or a group."]},
            },
        ),
        (
            errors.Forbidden("This action needs the admin role."),
            403,
            {
                "detail": "This action needs the admin role.",
                "code": "permission_denied",
                "errors": {},
            },
        ),
    ],
)
def test_the_api_maps_each_domain_error_kind_to_its_status_and_body(exc, status, body) -> None:
    assert api_answer(exc) == (status, body)


def test_the_app_errors_are_domain_error_kinds_and_keep_their_api_answers() -> None:
    from scheduler_admin.accounts.grants import GrantError, GrantNotFound
    from scheduler_admin.accounts.services import AccountError
    from scheduler_admin.cluster.services import IngestErrors
    from scheduler_admin.enforcement.evictions import OrderNotFound
    from scheduler_admin.enforcement.previews import UnknownTarget
    from scheduler_admin.enforcement.timers import TimerNotFound
    from scheduler_admin.queues.services import NotFound, StaleVersion

    for kind in (NotFound, TimerNotFound, OrderNotFound, GrantNotFound):
        assert issubclass(kind, errors.NotFound)
    for kind in (IngestErrors, UnknownTarget, AccountError, GrantError):
        assert issubclass(kind, errors.Invalid)
        assert issubclass(kind, ValueError)  # as before: callers that catch ValueError still do
    assert issubclass(StaleVersion, errors.Stale)
    assert api_answer(IngestErrors({"body": ["The push is empty."]})) == (
        400,
        {
            "detail": "The cluster state is not valid.",
            "code": "invalid",
            "errors": {"body": ["The push is empty."]},
        },
    )
    assert UnknownTarget("queue", "No queue root.x.").errors == {"queue": ["No queue root.x."]}
    assert AccountError("Taken.", field="username").field == "username"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("exc", "status", "words"),
    [
        (errors.Stale("Version 3 was saved since.", current=3), 409, "Changed meanwhile"),
        (errors.Conflict("The run already ended."), 409, "Not possible now"),
        (errors.Invalid("The name is taken.", field="name"), 400, "Not accepted"),
    ],
)
def test_the_console_answers_each_domain_error_with_a_page_saying_why(exc, status, words) -> None:
    request = RequestFactory().post("/partitions/default/queues/root.x/")
    request.user = AnonymousUser()
    response = DomainErrorPages(lambda _: None).process_exception(request, exc)
    assert response is not None
    assert response.status_code == status
    page = response.content.decode()
    assert words in page
    assert str(exc) in page


def test_not_found_and_forbidden_are_left_to_djangos_handlers_of_the_404_and_403_pages() -> None:
    """Those two kinds are Django's own exceptions: its handlers render the console's pages."""
    assert isinstance(errors.NotFound("x"), Http404)
    assert isinstance(errors.Forbidden("x"), PermissionDenied)
    request = RequestFactory().get("/")
    request.user = AnonymousUser()
    middleware = DomainErrorPages(lambda _: None)
    assert middleware.process_exception(request, errors.NotFound("gone")) is None
    assert middleware.process_exception(request, errors.Forbidden("no")) is None


def test_the_console_mapping_leaves_api_paths_and_other_errors_alone() -> None:
    middleware = DomainErrorPages(lambda _: None)
    api_request = RequestFactory().get("/api/v1/partitions/")
    assert middleware.process_exception(api_request, errors.Stale("old", current=2)) is None
    page_request = RequestFactory().get("/")
    assert middleware.process_exception(page_request, KeyError("a bug")) is None
