"""Suite-wide rules for the real services the tests talk to.

Tests that need PostgreSQL (any test using the database) or Redis (marked ``redis``) run against
the servers named by ``DATABASE_URL`` and ``REDIS_URL`` (defaults in
``scheduler_admin/test_settings.py``). When one is unreachable:

- under ``CI=true`` nothing is skipped: those tests fail, so CI can never pass without them;
- otherwise they are skipped and the run ends with a loud summary line saying so.

Browser tests (marked ``e2e``) also need Chromium at ``/usr/bin/chromium`` and the
``playwright`` package, under the same rule.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

import pytest
from django.conf import settings

from tests.e2e.browser import browser_missing_reason

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
DB_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_setup",
    "live_server",
    "admin_user",
    "admin_client",
}

_skipped: dict[str, int] = {}


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.5):
            return True
    except OSError:
        return False


def _postgres_reachable() -> bool:
    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.postgresql":
        return False
    return _port_open(database.get("HOST") or "127.0.0.1", int(database.get("PORT") or 5432))


def _redis_reachable() -> bool:
    url = urlparse(settings.REDIS_URL or "")
    return bool(url.hostname) and _port_open(url.hostname, url.port or 6379)


def _needs_postgres(item: pytest.Item) -> bool:
    return (
        item.get_closest_marker("django_db") is not None
        or item.get_closest_marker("postgres") is not None
        or bool(DB_FIXTURES & set(getattr(item, "fixturenames", ())))
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if IN_CI or not settings.configured:  # not configured: run with -p no:django (unit tests)
        return
    available = {"PostgreSQL": _postgres_reachable(), "Redis": _redis_reachable()}
    browser_missing = None
    if any(item.get_closest_marker("e2e") is not None for item in items):
        browser_missing = browser_missing_reason()
        available["Chromium"] = browser_missing is None
    for item in items:
        missing = []
        if _needs_postgres(item) and not available["PostgreSQL"]:
            missing.append("PostgreSQL")
        if item.get_closest_marker("redis") is not None and not available["Redis"]:
            missing.append("Redis")
        if item.get_closest_marker("e2e") is not None and not available["Chromium"]:
            missing.append("Chromium")
        for service in missing:
            _skipped[service] = _skipped.get(service, 0) + 1
        if missing:
            reasons = [
                f"{browser_missing}" if service == "Chromium" else f"{service} unreachable"
                for service in missing
            ]
            item.add_marker(pytest.mark.skip(reason="; ".join(reasons)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for service, count in sorted(_skipped.items()):
        problem = "IS MISSING" if service == "Chromium" else "IS UNREACHABLE"
        terminalreporter.write_sep(
            "!",
            f"{count} TESTS SKIPPED: {service} {problem} (they fail under CI=true)",
            red=True,
            bold=True,
        )
