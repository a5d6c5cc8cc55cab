"""Settings for the test suite: the production module with test defaults for unset variables.

Tests talk to real PostgreSQL and Redis on loopback; ``DATABASE_URL`` and ``REDIS_URL`` from the
environment win (CI sets them), these defaults match the development machine.
"""

import os

from tests.support.processes import redis_url_for_this_worker

os.environ.setdefault("SCHEDULER_ENV", "test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
# A pytest-xdist worker moves REDIS_URL's database number into a block of its own
# (tests/support/processes.py says why; tests/conftest.py checks that the server has the
# databases). Set in the environment, so the processes a test starts inherit it.
os.environ["REDIS_URL"] = redis_url_for_this_worker(os.environ["REDIS_URL"])
# API throttle counters in Redis (issue 16, part "auth"): one key prefix per pytest process, so
# parallel runs on one Redis never count each other's requests; processes a test starts inherit
# it through the environment and share the counts with it.
os.environ.setdefault("THROTTLE_KEY_PREFIX", f"test-throttle-{os.getpid()}")
# Commits of the test databases do not wait for the WAL to reach the disk (PostgreSQL's
# ``synchronous_commit=off``, set through libpq's PGOPTIONS, so the processes a test starts
# inherit it). A commit is still atomic and visible to every other session at once; only a crash
# of PostgreSQL itself, which no test causes, could lose the last ones. On the CI machine's disk
# a synchronous commit costs about 3 ms, and the servers, workers and transactional tests of
# the suite commit hundreds of thousands of times.
os.environ.setdefault("PGOPTIONS", "-c synchronous_commit=off")

from scheduler_admin.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# One test database per pytest process, so two runs on one machine (a developer's and CI's, or
# parallel sessions) never drop each other's database. pytest-django removes it at the end.
DATABASES["default"]["TEST"] = {"NAME": f"test_scheduler_admin_{os.getpid()}"}  # noqa: F405

# The test client builds the middleware chain for every client: WhiteNoise's table of static
# files is built once per process instead (tests/support/static_files.py says why).
MIDDLEWARE = [
    "tests.support.static_files.FindersOnceWhiteNoiseMiddleware"
    if entry == "whitenoise.middleware.WhiteNoiseMiddleware"
    else entry
    for entry in MIDDLEWARE  # noqa: F405
]
