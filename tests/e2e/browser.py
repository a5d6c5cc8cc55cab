"""Helpers for browser tests that test modules import (the fixtures are in ``conftest.py``).

Nothing here imports Playwright or Django models at module level: ``tests/conftest.py`` asks
``browser_missing_reason`` whether the browser tests can run at all, and must be able to do so
on a machine without the ``playwright`` package.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.processes import PROJECT_DIR

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page, Request

#: Debian's Chromium. Playwright's own browser download (``playwright install``) is never used:
#: test machines are offline, and the distribution's build gets security updates with the OS.
CHROMIUM_PATH = Path("/usr/bin/chromium")
#: ``--no-sandbox``: CI and development containers run as root, where Chromium's sandbox cannot
#: start. ``--disable-background-networking``: no update checks or field trials, so the only
#: requests a page makes are the ones the tests see.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Where ``screenshot`` writes (git-ignored: ``test-output/`` is in ``.gitignore``).
SCREENSHOT_DIR = PROJECT_DIR / "test-output" / "screenshots"
#: Screenshots of the pages open when a test failed start with this (removed at the next run).
FAILED_PREFIX = "FAILED-"
#: Screenshot names become file names; keep them to one harmless path segment.
SCREENSHOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")
#: The login form (Django's ``LoginView`` with ``templates/registration/login.html``).
LOGIN_PATH = "/accounts/login/"


def browser_missing_reason() -> str | None:
    """Why browser tests cannot run here, or None when Chromium and Playwright are both present."""
    if not os.access(CHROMIUM_PATH, os.X_OK):
        return f"{CHROMIUM_PATH} is missing (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is missing (pip install -r requirements-dev.txt)"
    return None


def screenshot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Save a PNG of ``page`` as ``test-output/screenshots/<name>.png``; returns the path.

    Screenshots are for people (reviewing a page's look, or a failure); assertions belong in
    the test. Use a name that says page and state, e.g. ``dashboard-viewer``. ``full_page``
    captures the whole scroll height; pass False for very long pages (the viewport only).
    """
    if not SCREENSHOT_NAME.match(name):
        raise ValueError(f"screenshot name {name!r}: letters, digits, '.', '_' and '-' only")
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def submit_login_form(page: Page, username: str, password: str) -> None:
    """Fill in and submit the sign-in form the way a person does (labels, then the button)."""
    if LOGIN_PATH not in page.url:
        page.goto(LOGIN_PATH)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


def create_user(username: str, role: str | None) -> str:
    """Create a user holding ``role`` (None: no role); returns the password to sign in with.

    The server runs the production settings, which do not accept the MD5 hashes
    ``test_settings`` uses to keep other tests fast, so the password is hashed with PBKDF2 at
    full strength (a weaker hash would be re-hashed and saved at the first sign-in). That takes
    half a second, so every user of a run shares one random password, hashed once.
    """
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from scheduler_admin.accounts.roles import ROLES

    if role is not None and role not in ROLES:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLES)} or None")
    password, encoded = _shared_password()
    user = get_user_model().objects.create(username=username, password=encoded)
    if role is not None:
        # The groups come from a migration, and transactional tests empty every table after them.
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return password


@functools.cache
def _shared_password() -> tuple[str, str]:
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    password = secrets.token_urlsafe(12)
    hasher = PBKDF2PasswordHasher()
    return password, hasher.encode(password, hasher.salt())


class RequestLog:
    """Every request a page or context makes, in order (documents, assets, fetches).

    Attach it before navigating: ``log = RequestLog(page)``; then ``log.urls`` lists them and
    ``log.outside(origin)`` the ones that went anywhere but ``origin``.
    """

    def __init__(self, target: Page | BrowserContext) -> None:
        self.urls: list[str] = []
        target.on("request", self._record)

    def _record(self, request: Request) -> None:
        self.urls.append(request.url)

    def outside(self, origin: str) -> list[str]:
        prefix = origin.rstrip("/") + "/"
        return [url for url in self.urls if not url.startswith(prefix)]


def remove_failure_screenshots() -> None:
    """Screenshots of an earlier run's failures: misleading next to this run's. A parallel run
    removes them once, before its workers start (``tests/conftest.py``), since one worker's
    browser must not remove what another's failure just saved."""
    for old in SCREENSHOT_DIR.glob(f"{FAILED_PREFIX}*.png"):
        old.unlink(missing_ok=True)
