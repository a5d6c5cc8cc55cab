"""Suite-wide rules for the real services the tests talk to.

Tests that need PostgreSQL (any test using the database) or Redis (marked ``redis``) run against
the servers named by ``DATABASE_URL`` and ``REDIS_URL`` (defaults in
``scheduler_admin/test_settings.py``). When one is unreachable:

- under ``CI=true`` nothing is skipped: those tests fail, so CI can never pass without them;
- otherwise they are skipped and the run ends with a loud summary line saying so.

Browser tests (marked ``e2e``) also need Chromium at ``/usr/bin/chromium`` and the
``playwright`` package, under the same rule.

Parallel runs (``make test``: pytest-xdist, ``-n 4 --dist loadgroup``): each worker has its own
PostgreSQL test database (``test_settings``) and its own block of Redis databases
(``tests/support/processes.py``), checked here before the workers start. Tests listed in
``XDIST_GROUPS`` run one after another on a single worker; every other test goes to whichever
worker is free. ``docs/how-to/develop-and-test.md`` says when to add a module to a group.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from urllib.parse import urlparse, urlsplit, urlunsplit

import pytest
from django.conf import settings

from tests.e2e.browser import browser_missing_reason, remove_failure_screenshots
from tests.support.processes import REDIS_DBS_PER_WORKER

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

#: Test files (paths from the checkout) whose tests run on one xdist worker, in file order, as
#: one work unit of ``--dist loadgroup``, by group name. A file belongs here when its tests share
#: an expensive module- or package-scoped fixture (started once per worker that runs any of
#: them), or when running two of them at once would make them compete for the 2 cores in a way
#: their real-time assertions cannot absorb. Big groups are handed out first (xdist orders work
#: units by size), so they never end up as the run's tail.
XDIST_GROUPS: dict[str, str] = {
    # Browser tests: each group starts one live stack (gunicorn, worker, beat) and one Chromium
    # (package-scoped fixtures of tests/e2e/conftest.py) and keeps them for all its files. Two
    # groups of about equal length: two browsers at once, not four.
    **dict.fromkeys(
        [
            "tests/e2e/test_usage_history.py",
            "tests/e2e/test_live_updates.py",
            "tests/e2e/test_console_flows.py",
            "tests/e2e/test_accessibility.py",
            "tests/e2e/test_visual_language.py",
            "tests/e2e/test_error_pages.py",
            "tests/e2e/test_help.py",
            "tests/e2e/test_stopped_run.py",
        ],
        "e2e-a",
    ),
    **dict.fromkeys(
        [
            "tests/e2e/test_single_sign_on.py",
            "tests/e2e/test_content_security_policy.py",
            "tests/e2e/test_console_basics.py",
            "tests/e2e/test_browsable_api.py",
            "tests/e2e/test_cluster_agents.py",
            "tests/e2e/test_tenant_admin.py",
            "tests/e2e/test_users_and_timers.py",
            "tests/e2e/test_tenant_accounts.py",
            "tests/e2e/test_scheduled_changes.py",
            "tests/e2e/test_notifications.py",
        ],
        "e2e-b",
    ),
    # Real-time assertions against beat's 5 s sweeps (within one sweep after a timer is due):
    # one live loop at a time.
    "tests/integration/test_live_loop.py": "live-loop",
    "tests/integration/test_scheduled_changes_live.py": "live-loop",
    # Real workers and beat against a hanging chat service, in the live loop's Redis database.
    "tests/integration/test_notification_worker.py": "live-loop",
    # `make run` started whole, again and again, with signals sent to its process groups; the
    # module prepares its SQLite var/ once.
    "tests/integration/test_run_script.py": "run-script",
    # Module-scoped fixtures: started or read once per worker that runs any of the module.
    "tests/integration/test_compose_stack.py": "compose-stack",
    "tests/integration/test_concurrent_saves.py": "concurrent-saves",
    "tests/integration/test_revocation_races.py": "revocation-races",
    "tests/integration/test_run_abort_races.py": "run-abort-races",
    # Its state is committed once for the whole module (a transactional test beside it on the
    # same worker would empty the tables under it).
    "tests/integration/test_role_matrix.py": "role-matrix",
    "tests/unit/test_docs_site.py": "docs-site",
    "tests/integration/test_kubernetes_manifests.py": "kubernetes-manifests",
    "tests/agent/test_kube_fixtures.py": "kube-fixtures",
    "tests/unit/test_grafana_dashboard.py": "grafana-dashboard",
}


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


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before a parallel run starts its workers: old failure screenshots go, and the Redis server
    has a block of databases for each worker, or the run stops at once saying so (instead of
    failing test by test)."""
    config = session.config
    if hasattr(config, "workerinput") or not settings.configured:
        return
    workers = config.getoption("numprocesses", None)
    if not isinstance(workers, int) or workers < 1:
        return
    remove_failure_screenshots()
    if workers < 2 or not _redis_reachable():
        return
    import redis

    needed = REDIS_DBS_PER_WORKER * workers
    highest = urlunsplit(urlsplit(settings.REDIS_URL)._replace(path=f"/{needed - 1}"))
    client = redis.Redis.from_url(highest, socket_timeout=5)
    try:
        client.ping()
    except redis.ResponseError as exc:  # "DB index is out of range"
        pytest.exit(
            f"{workers} xdist workers need {needed} Redis databases ({REDIS_DBS_PER_WORKER} "
            f"each) at {settings.REDIS_URL} ({exc}): start redis-server with --databases "
            f"{needed}, or run fewer workers (make test PYTEST_PARALLEL=)",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    finally:
        client.close()


def xdist_group_of(path: str) -> str | None:
    """The ``XDIST_GROUPS`` group of a test file (a path from the checkout), if it has one."""
    group = XDIST_GROUPS.get(path)
    if group is None and path.startswith("tests/e2e/"):
        group = "e2e-b"  # a new browser test file: a group with a browser already running
    return group


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` with the groups of ``XDIST_GROUPS``: xdist's load-scope scheduler
    with a test's work unit being its file's group, or the test alone.

    xdist's own loadgroup reads ``xdist_group`` marks through a suffix it appends to each test's
    node id, which pytest 9 no longer lets a plugin change: its groups silently never formed
    (every test went to any worker). This asks ``XDIST_GROUPS`` by file instead, in the controller,
    with no marks at all."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid.split("::", 1)[0]) or nodeid

    return FileGroupScheduling(config, log)


@pytest.fixture(autouse=True)
def _no_kept_configs_from_earlier_tests() -> None:
    """Each test starts with no parsed config (``queues.saved``) and no dashboard roll-up
    (``web.dashboard.rollup``) kept in this process. Both are keyed by what tells one revision
    or one change from another in a database's life (the partition's id, a revision's number
    and time, the usage generation); tests rebuild partitions in databases whose ids start
    again after a flush, often at one frozen time, so two tests' different partitions could
    share a key (the demo's leaves were then those of a tenant tree of an earlier test)."""
    if not settings.configured:
        return
    from scheduler_admin.queues import saved
    from scheduler_admin.web.dashboard import fragments, rollup, sparklines

    saved.clear()
    rollup.clear()
    sparklines.clear()
    fragments.clear()


def _flushes_the_database(item: pytest.Item) -> bool:
    """Whether pytest-django empties every table after ``item`` (a transactional test), by the
    rule pytest-django orders tests with."""
    marker = item.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or marker.args[:1] == (True,)):
        return True
    return bool({"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a transactional test has emptied every table, put back the rows a migration made:
    the three role groups (``accounts`` migration 0001), as a freshly migrated database has them.

    A single pytest process runs transactional tests after all others (pytest-django's order),
    so no other test ever saw the emptied tables. A parallel run hands each worker tests in
    another order (its groups first), and tests that take ``Group.objects.get(name="viewer")``
    for granted failed after a browser or live-loop test on the same worker's database. This
    runs after the whole teardown (the flush included, whichever fixture did it); not after the
    last test, whose teardown drops the test database."""
    result = yield
    if nextitem is None or not settings.configured or not _flushes_the_database(item):
        return result
    from django.contrib.auth.models import Group
    from pytest_django.plugin import blocking_manager_key

    from scheduler_admin.accounts.roles import ROLES

    with item.config.stash[blocking_manager_key].unblock():
        for name in ROLES:
            Group.objects.get_or_create(name=name)
    return result


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
