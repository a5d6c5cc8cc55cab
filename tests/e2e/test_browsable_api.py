"""The browsable API in a real browser: signed-in users browse the API as pages (assets from the
server alone, a way back to the console), an operator saves a quota from the page's own form
(its CSRF token sent by DRF's script), a viewer gets no write form, anonymous visitors sign in
first."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.e2e.browser import LOGIN_PATH, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

NIGHTLY = "/api/v1/partitions/default/queues/root.batch.nightly/"


@pytest.fixture
def demo(transactional_db) -> None:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())


def test_an_operator_browses_from_the_root_and_saves_a_quota_from_the_page(
    demo, signed_in_page: Callable[..., Page]
) -> None:
    """Slow (about 20 s): a whole walk through the browsable API in Chromium, page by page."""
    page = signed_in_page("operator")
    page.goto("/api/v1/")
    expect(page.get_by_role("heading", level=1)).to_have_text("API root")
    page.get_by_role("link", name=re.compile(r"partitions.default.queues.$")).click()
    expect(page.locator(".response-info")).to_contain_text("root.batch.nightly")
    screenshot(page, "browsable-api-queues")

    page.goto(NIGHTLY)
    body = {"max": {"memory": "500Gi", "vcore": "200"}, "version": 1,
            "comment": "from the browsable API"}  # fmt: skip
    page.locator("textarea[name='_content']").fill(json.dumps(body))
    page.get_by_role("button", name="PATCH", exact=True).click()
    expect(page.locator(".response-info")).to_contain_text("HTTP 200 OK")
    expect(page.locator(".response-info")).to_contain_text('"version": 2')
    assert ConfigRevision.objects.filter(comment="from the browsable API").exists()
    assert Queue.objects.get(path="root.batch.nightly").version == 2

    page.get_by_role("link", name=re.compile("console")).first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")


def test_a_viewer_browses_without_write_forms_and_anonymous_visitors_sign_in_first(
    demo, signed_in_page: Callable[..., Page], page: Page
) -> None:
    viewer = signed_in_page("viewer")
    viewer.goto(NIGHTLY)
    expect(viewer.locator(".response-info")).to_contain_text('"path": "root.batch.nightly"')
    for method in ("PATCH", "PUT", "DELETE", "POST"):
        expect(viewer.get_by_role("button", name=method, exact=True)).to_have_count(0)
    expect(viewer.locator("textarea[name='_content']")).to_have_count(0)
    screenshot(viewer, "browsable-api-viewer")

    page.goto(NIGHTLY)
    expect(page).to_have_url(re.compile(re.escape(LOGIN_PATH) + r"\?next="))
    page.goto("/api/docs/")
    expect(page).to_have_url(re.compile(re.escape(LOGIN_PATH) + r"\?next="))
