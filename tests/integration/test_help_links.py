"""Every console page links to its page of the documentation, and the product serves the
documentation to signed-in users under ``/docs/`` (``scheduler_admin.web.help``).

- every route of the console either has a help page, which exists in ``docs/`` and in the site's
  navigation, or is one of the few without a page of its own (JSON, the health check, the
  documentation itself);
- every console page rendered for an admin on a partition with a finished run, a pending timer
  and several revisions has the Help link of its route in its top bar;
- ``/docs/`` serves the files of the built site, behind sign-in, under the console's
  Content-Security-Policy; a path outside the site, or a missing page, is a 404; a checkout
  whose site was never built answers with a page that says how to build it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, resolve

from scheduler_admin.web import urls as console_urls
from scheduler_admin.web.help.pages import HELP_PAGES, NO_HELP
from tests.integration.test_web_every_page import admin, console_pages, state  # noqa: F401
from tests.support.console import signed_in_client

PROJECT_DIR = Path(__file__).resolve().parents[2]
HELP_LINK = re.compile(r'<a class="help-link" href="(/docs/[^"]*)"')


def console_route_names(patterns: list[URLPattern | URLResolver] | None = None) -> set[str]:
    names: set[str] = set()
    for pattern in console_urls.urlpatterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            names |= console_route_names(pattern.url_patterns)
        elif pattern.name:
            names.add(pattern.name)
    return names


def nav_pages(node: object) -> set[str]:
    """Every page file in mkdocs.yml's ``nav``."""
    if isinstance(node, str):
        return {node} if node.endswith(".md") else set()
    if isinstance(node, list):
        return set().union(*(nav_pages(item) for item in node))
    if isinstance(node, dict):
        return set().union(*(nav_pages(value) for value in node.values()))
    return set()


def test_every_console_route_has_a_help_page_in_the_docs_site():
    routes = console_route_names()
    assert {"dashboard", "queue-detail", "run-detail", "users", "my-tokens"} <= routes
    without = sorted(routes - HELP_PAGES.keys() - NO_HELP)
    assert not without, f"console routes without a help page (web/help/pages.py): {without}"
    assert not (HELP_PAGES.keys() - routes), "help pages for routes that do not exist"
    nav = nav_pages(yaml.safe_load((PROJECT_DIR / "mkdocs.yml").read_text())["nav"])
    for route, page in HELP_PAGES.items():
        assert (PROJECT_DIR / "docs" / f"{page}.md").is_file(), f"{route}: docs/{page}.md"
        assert f"{page}.md" in nav, f"{route}: docs/{page}.md is not in mkdocs.yml's nav"


@pytest.mark.django_db
def test_every_console_page_has_the_help_link_of_its_route(state, admin):  # noqa: F811
    user = get_user_model().objects.get(pk=admin.session["_auth_user_id"])
    pages = [
        *console_pages(state["run"]),
        "/glossary/",
        "/account/tokens/",
        f"/users/{user.pk}/tokens/",
        "/account/notifications/",
    ]
    checked = set()
    for url in pages:
        response = admin.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        if 'class="topbar"' not in page:  # a fragment loaded into a page (tree rows)
            continue
        route = resolve(url.split("?")[0]).url_name
        links = HELP_LINK.findall(page)
        assert links == [f"/docs/{HELP_PAGES[route]}/"], f"{url} ({route}): {links}"
        checked.add(route)
    assert len(checked) >= 14, checked


def fake_site(root: Path) -> Path:
    (root / "how-to" / "api-tokens").mkdir(parents=True)
    (root / "assets").mkdir()
    (root / "index.html").write_text("<!doctype html><title>Home</title><p>home page")
    (root / "how-to" / "api-tokens" / "index.html").write_text("<p>tokens page")
    (root / "assets" / "app.js").write_text("console.log(1)")
    (root / "assets" / "app.css").write_text("p {}")
    return root


@pytest.mark.django_db
def test_signed_in_users_read_the_built_site_under_the_console_policy(settings, tmp_path):
    settings.DOCS_SITE_DIR = fake_site(tmp_path / "site")
    (tmp_path / "secret.txt").write_text("outside the site")
    viewer = signed_in_client("viewer")

    home = viewer.get("/docs/")
    assert home.status_code == 200 and b"home page" in b"".join(home.streaming_content)
    assert home["Content-Type"].startswith("text/html")
    assert "script-src 'self'" in home["Content-Security-Policy"]

    page = viewer.get("/docs/how-to/api-tokens/")
    assert b"tokens page" in b"".join(page.streaming_content)
    without_slash = viewer.get("/docs/how-to/api-tokens")
    assert (without_slash.status_code, without_slash["Location"]) == (
        302,
        "/docs/how-to/api-tokens/",
    )
    script = viewer.get("/docs/assets/app.js")
    assert script.status_code == 200 and "javascript" in script["Content-Type"]
    assert viewer.get("/docs/assets/app.css")["Content-Type"].startswith("text/css")

    assert viewer.get("/docs/how-to/no-such-page/").status_code == 404
    for outside in ("/docs/../secret.txt", "/docs/%2e%2e/secret.txt", "/docs//etc/passwd"):
        response = viewer.get(outside)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert response.status_code == 404, outside
        assert b"outside the site" not in body and b"root:" not in body

    anonymous = Client().get("/docs/how-to/api-tokens/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_a_site_never_built_says_how_to_build_it(settings, tmp_path):
    settings.DOCS_SITE_DIR = tmp_path / "site"  # does not exist
    response = signed_in_client("viewer").get("/docs/how-to/api-tokens/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "Help pages not built" in page and "make docs" in page
    assert "<code>docs/how-to/api-tokens.md</code>" in page
    assert 'class="topbar"' in page and "help-link" not in page
