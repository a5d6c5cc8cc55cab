"""The Content-Security-Policy header (issue 16, part "auth"): on every HTML page and SVG, with
no inline script allowed; not on PDFs, CSVs and JSON (a browser's PDF viewer must not be
refused). The browser test ``tests/e2e/test_content_security_policy.py`` loads every page
under it."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.support.console import signed_in_client

pytestmark = pytest.mark.django_db


def directives(header: str) -> dict[str, list[str]]:
    return {name: sources for name, *sources in (p.split() for p in header.split(";") if p)}


def test_pages_carry_the_policy_without_inline_script():
    admin = signed_in_client("admin")
    for url in ("/", "/users/", "/account/tokens/", "/api/v1/", "/api/docs/", "/admin/login/"):
        response = admin.get(url, HTTP_ACCEPT="text/html")
        assert response.status_code == 200, url
        policy = directives(response["Content-Security-Policy"])
        assert policy["script-src"] == ["'self'"], url
        assert policy["style-src"] == ["'self'"] and policy["frame-ancestors"] == ["'none'"]
        assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
        assert "'unsafe-inline'" not in policy["default-src"]
    assert "Content-Security-Policy" in Client().get("/accounts/login/")


def test_swagger_uis_start_up_script_is_a_file_of_its_own():
    admin = signed_in_client("admin")
    page = admin.get("/api/docs/").content.decode()
    assert '<script src="/api/docs/?script="></script>' in page
    script = admin.get("/api/docs/?script=")
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert b"SwaggerUIBundle" in script.content
    assert Client().get("/api/docs/?script=", HTTP_ACCEPT="application/json").status_code == 401


def test_downloads_and_json_go_without_it_and_svg_gets_it():
    admin = signed_in_client("admin")
    for url in ("/api/v1/audit/export.pdf", "/api/v1/audit/export.csv", "/api/v1/"):
        response = admin.get(url, HTTP_ACCEPT="application/json")
        assert response.status_code == 200, url
        assert "Content-Security-Policy" not in response, url
    svg = Client().get("/static/favicon.svg")
    assert svg.status_code == 200
    assert "script-src 'self'" in svg["Content-Security-Policy"]
