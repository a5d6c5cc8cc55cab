"""Content-Security-Policy in a real browser (issue 16, part "auth"): every console page, the
token pages, the browsable API, the API docs (Swagger UI), the Django admin, the sign-in and
error pages load under the policy with no violation reported by Chromium, and each carries the
header without inline script allowed.

The violation check itself is in ``conftest.py`` (every browser test fails on a violation);
this test makes sure every page is visited, with real data in it, and that the policy is there.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, Response

from scheduler_admin.accounts.services import issue_token
from scheduler_admin.accounts.tokens import ApiToken
from tests.e2e.browser import screenshot
from tests.integration.test_web_every_page import console_pages, state  # noqa: F401 (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def _policy(response: Response | None, url: str) -> dict[str, list[str]]:
    assert response is not None, url
    header = response.header_value("content-security-policy")
    assert header, f"{url} has no Content-Security-Policy"
    return {
        name: sources
        for name, *sources in (part.split() for part in header.split(";") if part.strip())
    }


def _visit(page: Page, url: str) -> None:
    response = page.goto(url)
    page.wait_for_load_state("networkidle")
    policy = _policy(response, url)
    assert policy["script-src"] == ["'self'"], (url, policy)
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]


def test_every_page_loads_without_a_policy_violation(
    state,  # noqa: F811 - the fixture imported above
    signed_in_page: Callable[..., Page],
    page: Page,
) -> None:
    """Over 20 s on a loaded machine: every console page, the API's and the Django admin's pages
    are loaded in Chromium one after another, each until its scripts have run."""
    admin = signed_in_page("admin", "csp-admin")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="csp-admin")
    user.is_staff = user.is_superuser = True  # as the admin role makes it: the Django admin too
    user.save(update_fields=["is_staff", "is_superuser"])
    issue_token(user, actor=None, name="agent")
    pages = [
        *console_pages(state["run"]),
        "/glossary/",
        "/account/tokens/",
        f"/users/{user.pk}/tokens/",
        "/api/v1/",
        "/api/v1/partitions/default/queues/root.batch.nightly/",
        "/api/docs/",
        "/admin/",
        "/admin/auth/user/",
        f"/admin/auth/user/{user.pk}/change/",
        "/no-such-page/",
    ]
    for url in pages:
        _visit(admin, url)
    # Swagger UI really started (its script is a file now): the operations are drawn.
    admin.goto("/api/docs/")
    admin.locator(".swagger-ui .opblock").first.wait_for()
    screenshot(admin, "api-docs-under-csp", full_page=False)
    # A form post and its answer: a token issued on the owner's page, shown once.
    admin.goto("/account/tokens/")
    admin.get_by_label("Token name").fill("laptop")
    admin.get_by_role("button", name="Issue token").click()
    admin.wait_for_load_state("networkidle")
    assert ApiToken.objects.filter(user=user, name="laptop").exists()
    # Anonymous: the sign-in page.
    _visit(page, "/accounts/login/")
