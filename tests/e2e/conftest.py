"""Browser tests: Chromium, driven by Playwright, against the real running product.

What runs
---------
Once for the whole ``tests/e2e`` package (``live_stack``, package scope), on the pytest test
database (PostgreSQL) and a Redis database of these tests' own (``E2E_REDIS_DB``, emptied first):

- **web**: the ``web`` command of ``docker-compose.yml`` (gunicorn, the WSGI app) on a free
  loopback port, with 2 workers instead of 3;
- **worker** and **beat**: the compose Celery commands, started by ``LiveLoop`` from
  ``tests/integration/test_live_loop.py``. Beat's schedule is the product's static one (sweeps
  every 5 s; no setting shortens it), so something a sweep does shows up within about 6 s.

Each test runs with ``transactional_db`` (autouse here): what the test saves is committed, so the
server processes see it, and every table is emptied after the test. The role groups made by a
migration are emptied too; ``browser.create_user`` creates a role's group again when needed. The
package-scoped stack stops before any test outside ``tests/e2e`` runs, so its worker never
touches their data.

One Chromium for all browser tests, a fresh browser context (cookies, storage) per test. Each
context's ``base_url`` is the live server, so ``page.goto("/fences/")`` works. Each context also
checks four things that any page must get right, and fails the test at teardown if not: no
request leaves the live server (such requests are blocked and listed: machines are offline and
the product uses no CDN), no uncaught JavaScript error, no stylesheet, script, image or font
answered with an HTTP error, and no Content-Security-Policy violation (an inline script or
handler, a style element, anything from elsewhere).

How to write a page test
------------------------
Make a module ``tests/e2e/test_<page>.py``::

    import io

    import pytest
    from django.core.management import call_command
    from playwright.sync_api import expect

    from tests.e2e.browser import screenshot

    pytestmark = [pytest.mark.e2e, pytest.mark.redis]


    def test_an_operator_sees_the_fence_around_prod(signed_in_page):
        call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
        page = signed_in_page("operator")  # a new user of that role, signed in via the form
        page.goto("/fences/")
        expect(page.get_by_role("heading", name="Fences")).to_be_visible()
        screenshot(page, "fences-operator")  # test-output/screenshots/fences-operator.png

- Put state in the database the way the product does (``call_command("import_config", ...)``,
  the services, ``tests/support/scenario_db.py``); it is committed and the server sees it.
- ``signed_in_page(role)`` takes ``"viewer"``, ``"operator"``, ``"admin"`` or ``None`` (signed
  in, no role); call it once per role to compare what two users see (each gets its own
  context). ``page`` is an anonymous page; ``new_context()`` gives further contexts.
- Use Playwright's ``expect`` (it waits) and locate elements by role and label, as people and
  screen readers find them; that also checks the page's accessibility a little.
- Waiting on the worker: ``live_stack.wait_for(lambda: <query>, 15, "what did not happen")``
  polls and, on timeout, shows the processes' logs; ``live_stack.send("sweep_pending_asks")``
  runs a task now instead of waiting for beat.
- On failure every open page is saved as ``test-output/screenshots/FAILED-<test>-<n>.png``, and
  the processes' logs are under pytest's ``tmp_path`` (``live_stack.log_dir``).
- Run: ``.venv/bin/python -m pytest -q tests/e2e``; leave them out with ``-m "not e2e"``.
  Without Chromium they are skipped with a loud summary line, except under ``CI=true`` where
  they fail (``tests/conftest.py``).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_django
from django.conf import settings
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from tests.e2e.browser import (
    CHROMIUM_ARGS,
    CHROMIUM_PATH,
    FAILED_PREFIX,
    LOGIN_PATH,
    browser_missing_reason,
    create_user,
    remove_failure_screenshots,
    screenshot,
    submit_login_form,
)
from tests.integration.test_compose_stack import COMPOSE_FILE, CONTAINER_BIND, native_command
from tests.integration.test_live_loop import LiveLoop
from tests.support.processes import (
    ManagedProcess,
    flush_redis_db,
    free_port,
    isolated_redis_url,
    test_database_env,
    wait_until,
)

if TYPE_CHECKING:
    from playwright.sync_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Page,
        Response,
        Route,
        WebError,
    )

#: Redis database of the browser tests (the live-loop tests use 13, the compose test 14);
#: ``E2E_REDIS_DB`` in the environment picks another, so two checkouts can run them at once.
E2E_REDIS_DB = int(os.environ.get("E2E_REDIS_DB", "12"))
#: Playwright's wait for a locator, a navigation or an ``expect``, in ms: long enough for a CI
#: machine loaded by a parallel run beside other work (``expect``'s own default, 5 s, once was
#: not enough for Swagger UI to draw), short enough that a missing element fails in seconds
#: rather than a minute.
DEFAULT_TIMEOUT_MS = 20_000
VIEWPORT = {"width": 1280, "height": 900}
#: Asset types whose HTTP errors fail a test (a page's own 4xx document may be the point).
ASSET_TYPES = {"stylesheet", "script", "image", "font"}

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
#: Content-Security-Policy violations (issue 16, part "auth"): Chromium reports each on the
#: console ("Refused to execute inline script because it violates ... Content Security Policy
#: ..."), and this listener, injected before any script of the page (init scripts are not
#: subject to the page's policy), reports each ``securitypolicyviolation`` event too.
CSP_MARK = "CSP violation:"
CSP_LISTENER = (
    "document.addEventListener('securitypolicyviolation', (e) => console.error("
    f"'{CSP_MARK} ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + "
    "' in ' + e.sourceFile + ':' + e.lineNumber));"
)


# --- The live stack ------------------------------------------------------------------------------


@dataclass
class LiveStack:
    """The running web server, worker and beat; ``url`` is the server's origin (no slash)."""

    url: str
    web: ManagedProcess
    loop: LiveLoop
    log_dir: Path

    @property
    def processes(self) -> list[ManagedProcess]:
        return [self.web, *self.loop.processes]

    def wait_for(self, predicate: Callable[[], bool], timeout: float, message: str) -> None:
        """Poll ``predicate`` (e.g. a query for what the worker should have written); on timeout,
        or if a process dies, fail with ``message`` and the processes' logs."""
        wait_until(predicate, timeout, interval=0.25, message=message, watch=self.processes)

    def send(self, task_name: str, *args: object) -> str:
        """Enqueue ``scheduler_admin.enforcement.tasks.<task_name>`` now; returns the task id."""
        return self.loop.send(task_name, *args)


def _web_command(port: int) -> list[str]:
    """The compose ``web`` command for this machine: venv gunicorn, a loopback port, 2 workers."""
    import yaml

    compose = yaml.safe_load(COMPOSE_FILE.read_text())
    args = native_command(
        compose["services"]["web"]["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    args[args.index("--workers") + 1] = "2"  # a browser makes few requests at a time
    return args


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback http)
            return response.status == 200
    except OSError:  # not listening yet
        return False


@pytest.fixture(scope="package")
def live_stack(
    django_db_setup: None,
    django_db_blocker: pytest_django.DjangoDbBlocker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LiveStack]:
    """gunicorn + Celery worker + beat on the test database, for every test of ``tests/e2e``.

    Package scope: started once (5 to 10 s), and stopped when the last browser test is done, so
    that it is gone before ``django_db_setup`` drops the test database and before transactional
    tests elsewhere (which pytest-django runs next to these) start their own workers. What the
    processes committed after the last browser test's flush (beat's heartbeat, every 10 s) is
    emptied once they have stopped: the next test on this xdist worker starts from empty tables.
    """
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    redis_url = isolated_redis_url(settings.REDIS_URL, E2E_REDIS_DB)
    flush_redis_db(redis_url)
    base = tmp_path_factory.mktemp("e2e-stack")
    loop = LiveLoop(redis_url, base)
    port = free_port()
    # gunicorn opens a control socket in $XDG_RUNTIME_DIR and removes any socket already there:
    # a directory of this run's own keeps concurrent runs apart (see test_compose_stack).
    web_env = test_database_env({"XDG_RUNTIME_DIR": str(base)}, redis_url=redis_url)
    web = ManagedProcess("web", _web_command(port), env=web_env, log_dir=loop.log_dir)
    stack = LiveStack(f"http://127.0.0.1:{port}", web, loop, loop.log_dir)
    try:
        web.start()  # the three start at once, then each is waited for
        worker = loop.worker("e2e-worker", concurrency=2, wait=False)
        beat = loop.beat(wait=False)
        loop.wait_started(worker)  # until it consumes
        loop.wait_started(beat)
        stack.wait_for(lambda: _answers(f"{stack.url}/healthz"), 30, "web never answered")
        yield stack
    finally:
        try:
            loop.stop(stack.processes)  # SIGTERM to all at once: each takes seconds to stop
            loop.close()
        finally:
            web.stop()
            with django_db_blocker.unblock():
                call_command("flush", interactive=False, verbosity=0)


# --- Database and rules for every browser test ---------------------------------------------------


@pytest.fixture(autouse=True)
def _browser_test(request: pytest.FixtureRequest, transactional_db: None) -> None:
    """Commit what tests save (the server is another process) and insist on the ``e2e`` marker,
    which ``-m "not e2e"`` and the Chromium check in ``tests/conftest.py`` rely on."""
    if request.node.get_closest_marker("e2e") is None:
        pytest.fail("browser tests need pytestmark = [pytest.mark.e2e, pytest.mark.redis]")
    _stack_loses_deadlocks_with_the_flush()


def _stack_loses_deadlocks_with_the_flush() -> None:
    """The flush after each browser test (one ``TRUNCATE`` of every table) runs while the
    stack's worker and beat may still be writing. When the two deadlock, PostgreSQL aborts the
    side whose ``deadlock_timeout`` (1 s) runs out first: once in CI that was the flush (a
    worker's transaction held one table and waited for another the flush had locked), and the
    test errored in its teardown. The test's connection waits longer before it checks, so the
    stack's transaction is the one aborted (the test is over; its task fails or is run again).
    Setting it needs a superuser (as CI's ``postgres``): elsewhere the default stays."""
    with connection.cursor() as cursor:
        try:
            with transaction.atomic():
                cursor.execute("SET deadlock_timeout = '30s'")
        except DatabaseError:
            pass


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the item, so fixtures can tell whether the test failed."""
    report: pytest.TestReport = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def _failed(node: pytest.Item) -> bool:
    report = node.stash.get(_REPORTS, {}).get("call")
    return report is None or report.failed


# --- Browser -------------------------------------------------------------------------------------


@pytest.fixture(scope="package")
def browser(request: pytest.FixtureRequest) -> Iterator[Browser]:
    """One headless Debian Chromium for all browser tests (never Playwright's own download).

    Playwright's sync API keeps an asyncio event loop running in this thread, and Django then
    refuses ORM calls from it (``SynchronousOnlyOperation``) although the test code is plain
    sequential code: ``DJANGO_ALLOW_ASYNC_UNSAFE`` lifts that check while the browser lives.
    The live stack is started first, so its processes do not inherit the variable.
    """
    reason = browser_missing_reason()
    if reason:  # only reached under CI=true: elsewhere tests/conftest.py has skipped the test
        pytest.fail(f"browser tests cannot run: {reason}")
    request.getfixturevalue("live_stack")  # after the check: no stack started for nothing
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # a parallel run's controller did it
        remove_failure_screenshots()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=DEFAULT_TIMEOUT_MS)
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM_PATH), args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class _PageChecks:
    """What one context saw that no page may do (see the module docstring)."""

    origin: str
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    broken_assets: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    def block(self, route: Route) -> None:
        self.blocked.append(route.request.url)
        route.abort("blockedbyclient")

    def web_error(self, error: WebError) -> None:
        where = error.page.url if error.page else "?"
        self.errors.append(f"{where}: {error.error}")

    def response(self, response: Response) -> None:
        if response.status >= 400 and response.request.resource_type in ASSET_TYPES:
            self.broken_assets.append(f"{response.status} {response.url}")

    def console(self, message: ConsoleMessage) -> None:
        text = message.text
        if text.startswith(CSP_MARK) or "Content Security Policy" in text:
            where = message.page.url if message.page else "?"
            self.csp_violations.append(f"{where}: {text}")

    def problems(self) -> list[str]:
        return (
            [f"request outside {self.origin} (blocked): {url}" for url in self.blocked]
            + [f"uncaught JavaScript error on {error}" for error in self.errors]
            + [f"asset failed: {asset}" for asset in self.broken_assets]
            + [f"Content-Security-Policy violation on {text}" for text in self.csp_violations]
        )


@pytest.fixture
def new_context(
    browser: Browser, live_stack: LiveStack, request: pytest.FixtureRequest
) -> Iterator[Callable[[], BrowserContext]]:
    """A factory of fresh browser contexts on the live server, all closed after the test.

    On failure each open page is screenshotted first; when the test passed, the page checks
    (module docstring) are asserted.
    """
    opened: list[tuple[BrowserContext, _PageChecks]] = []

    def open_context() -> BrowserContext:
        checks = _PageChecks(live_stack.url)
        context = browser.new_context(base_url=live_stack.url, viewport=VIEWPORT)
        context.set_default_timeout(DEFAULT_TIMEOUT_MS)
        # Only requests that leave the live server are routed (and aborted): the regex matches
        # every URL except the server's own, so local pages pay nothing for the check.
        context.route(re.compile(rf"^(?!{re.escape(live_stack.url)}/)"), checks.block)
        context.on("weberror", checks.web_error)
        context.on("response", checks.response)
        context.add_init_script(CSP_LISTENER)
        context.on("console", checks.console)
        opened.append((context, checks))
        return context

    yield open_context

    node = request.node
    failed = _failed(node)
    problems = []
    pages = itertools.count(1)
    for context, checks in opened:
        if failed:
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", node.name)[:80]
            for page in context.pages:
                screenshot(page, f"{FAILED_PREFIX}{slug}-{next(pages)}")
        problems += checks.problems()
        context.close()
    if problems and not failed:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture
def context(new_context: Callable[[], BrowserContext]) -> BrowserContext:
    """A fresh, signed-out browser context on the live server."""
    return new_context()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    """A signed-out page in ``context``; ``page.goto("/")`` opens the live server."""
    return context.new_page()


@pytest.fixture
def signed_in_page(new_context: Callable[[], BrowserContext]) -> Callable[..., Page]:
    """``signed_in_page(role, username=None)``: a page in a context of its own, signed in
    through the login form as a new user holding ``role`` (None: signed in without a role)."""
    numbers = itertools.count(1)

    def sign_in_as(role: str | None, username: str | None = None) -> Page:
        username = username or f"{role or 'norole'}-{next(numbers)}"
        password = create_user(username, role)
        page = new_context().new_page()
        submit_login_form(page, username, password)
        if LOGIN_PATH in page.url:
            raise AssertionError(f"signing in as {username} failed: still on {page.url}")
        return page

    return sign_in_as
