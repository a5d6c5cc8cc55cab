"""Console forms take no query parameter they do not define (SPEC 7's strict previews, in the
console): a POST whose address carries one (``?dry_run=true``, ``?dryrun=1``,
``?action=preview``) is answered with a 400 page naming it and saying that nothing was saved,
and nothing is: the queue page's Save with ``?dry_run=true`` in its address once saved for
real. The Preview button is the form's ``action`` field and never saves.

Two parts: each form that writes, sent with a body that saves when the address is clean (the
control), is refused with the parameter and changes nothing; and every console route, filled
with sample arguments, refuses a POST with an unknown parameter before its view runs, so a form
added later is covered without being listed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, reverse

from scheduler_admin.accounts.grant_models import QueueGrant
from scheduler_admin.enforcement.models import QuotaTimer
from scheduler_admin.queues.models import ConfigRevision, Queue
from scheduler_admin.web.common import queue_url
from tests.api.test_malformed_input import snapshot
from tests.integration.test_web_malformed_input import edit_form, settings_form
from tests.support.console import (
    NIGHTLY,
    import_demo,
    lower_nightly_max,
    nightly_tasks,
    signed_in_client,
)

pytestmark = pytest.mark.django_db

REFUSED = [("dry_run=true", "dry_run"), ("dryrun=1", "dryrun"), ("action=preview", "action")]


@pytest.fixture
def ctx() -> dict[str, Any]:
    partition = import_demo()
    nightly_tasks(partition)
    timer = lower_nightly_max()
    partition.refresh_from_db()
    return {"partition": partition, "timer": timer.pk}


def everything() -> dict[str, Any]:
    return {
        **snapshot(),
        "users": list(get_user_model().objects.order_by("pk").values_list("pk", "is_active")),
        "grants": QueueGrant.objects.count(),
    }


def forms(ctx: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """Each console form that writes, with a body it saves when its address is clean."""
    version = Queue.objects.get(path=NIGHTLY).version
    timer = QuotaTimer.objects.filter(status="pending").order_by("pk").first()
    return {
        "cancel timer": (
            f"/timers/{timer.pk if timer else ctx['timer']}/cancel/",
            {"comment": "no"},
        ),
        "queue save": (queue_url("default", NIGHTLY), edit_form(version, **{"res-0-max": "240Gi"})),
        "queue preview": (queue_url("default", NIGHTLY), edit_form(version, action="preview")),
        "partition settings": (
            "/partitions/default/settings/",
            settings_form(ctx["partition"], miss_percent="7"),
        ),
        "revert": (
            "/history/default/1/revert/",
            {"comment": "back", "version": str(ctx["partition"].version)},
        ),
        "create user": ("/users/create/", {"username": "mallory", "role": "viewer"}),
    }


def test_every_writing_form_refuses_a_parameter_in_its_address_and_saves_nothing(ctx):
    admin = signed_in_client("admin")
    failures = []
    for label, (url, body) in forms(ctx).items():
        for query, named in REFUSED:
            before = everything()
            response = admin.post(f"{url}?{query}", body)
            text = response.content.decode()
            if response.status_code != 400:
                failures.append(f"{label} ?{query}: {response.status_code}")
            elif f"<code>{named}</code>" not in text or "Nothing was saved" not in text:
                failures.append(f"{label} ?{query}: the page does not name {named}")
            if everything() != before:
                failures.append(f"{label} ?{query}: something changed")
    assert not failures, "\n".join(failures)


def test_the_same_forms_with_a_clean_address_do_save(ctx):
    """The control: the bodies above are valid, so the refusals come from the address."""
    admin = signed_in_client("admin")
    for label in forms(ctx):
        if label == "queue preview":
            continue
        ctx["partition"].refresh_from_db()  # each save moves the versions the next form sends
        url, body = forms(ctx)[label]
        before = everything()
        response = admin.post(url, body)
        assert response.status_code in (200, 302), (label, response.content[:500])
        assert everything() != before, label


def test_the_queue_form_posts_to_the_page_without_its_query_string(ctx):
    """The edit form keeps the page's tabs and filters out of its address, so a queue page
    opened with a query string (a sorted task table) still saves."""
    admin = signed_in_client("admin")
    page = admin.get(queue_url("default", NIGHTLY) + "?tasks_sort=priority")
    action = f'action="{queue_url("default", NIGHTLY)}#change"'
    assert action in page.content.decode()


def test_cancel_timer_still_takes_its_way_back(ctx):
    admin = signed_in_client("admin")
    response = admin.post(f"/timers/{ctx['timer']}/cancel/?next=/", {"comment": "no"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert QuotaTimer.objects.get(pk=ctx["timer"]).status == "cancelled"


def test_preview_never_saves(ctx):
    admin = signed_in_client("admin")
    version = Queue.objects.get(path=NIGHTLY).version
    revisions = ConfigRevision.objects.count()
    for action in ("preview", "Preview", "PREVIEW", "", "save "):
        response = admin.post(queue_url("default", NIGHTLY), edit_form(version, action=action))
        assert response.status_code in (200, 302)
    assert ConfigRevision.objects.count() == revisions
    assert Queue.objects.get(path=NIGHTLY).version == version


def _routes(resolver: URLResolver, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


SAMPLES = {"int": "1", "str": "default", "path": NIGHTLY}


def test_every_console_route_refuses_an_unknown_parameter_on_post(ctx):
    """Whatever the page: a POST with a parameter its view does not declare never reaches it."""
    admin = signed_in_client("admin")
    checked = 0
    failures = []
    for route, pattern in _routes(get_resolver()):
        if route.startswith(("api/", "admin/", "static/")) or not pattern.name:
            continue
        converters = pattern.pattern.converters
        kwargs = {name: SAMPLES.get(_kind(conv), "1") for name, conv in converters.items()}
        try:
            url = reverse(pattern.name, kwargs=kwargs)
        except NoReverseMatch:  # a name shared by routes with other arguments
            continue
        before = everything()
        response = admin.post(url + "?dry_run=true", {"comment": "x"})
        checked += 1
        if response.status_code != 400 or b"<code>dry_run</code>" not in response.content:
            failures.append(f"{route}: {response.status_code}")
        if everything() != before:
            failures.append(f"{route}: something changed")
    assert checked >= 30
    assert not failures, "\n".join(failures)


def _kind(converter: object) -> str:
    return type(converter).__name__.removesuffix("Converter").lower()


def test_a_signed_out_post_is_still_sent_to_sign_in(ctx):
    response = Client().post(queue_url("default", NIGHTLY) + "?dry_run=true", {})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
