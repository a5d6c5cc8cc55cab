"""How long a web request may run: gunicorn's worker timeout and the product's own deadline.

``WEB_TIMEOUT`` is gunicorn's worker timeout: a worker silent for that long is killed. A killed
worker cannot answer: gunicorn sends its own HTML 500 page, and a worker killed after its
transaction committed leaves the client without the answer to a save that happened. So the
product stops first: ``REQUEST_DEADLINE`` (two thirds of ``WEB_TIMEOUT`` unless set) is checked
between the steps of the long requests (a whole config imported, checked or previewed: read,
validate, preview), always before a write transaction starts, and past it the request answers
503 with the API's JSON error body and nothing saved (``scheduler_admin.base.deadlines``). A save
that has started finishes and answers: the time between the two limits is for it.

The defaults are sized for the largest config ``CONFIG_MAX_BYTES`` allows (5 MiB, some 18,000
queues): ``make bench`` measures its import, a few seconds on an idle machine and about fifteen
on a busy two-core one (README "Large configs"), well within the deadline of 80 s.

Read by ``settings.py`` and by ``gunicorn.conf.py`` (before Django is set up), so both sides
parse the same variables the same way: a bad value stops start-up naming the variable.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from scheduler_admin.base.env import Env

#: gunicorn's worker timeout, in seconds, unless ``WEB_TIMEOUT`` says otherwise.
DEFAULT_WEB_TIMEOUT = 120
#: The smallest ``WEB_TIMEOUT`` accepted: less would cut off ordinary work on a busy machine.
MIN_WEB_TIMEOUT = 30


def web_timeout(env: Env) -> int:
    """``WEB_TIMEOUT``: seconds a gunicorn worker may spend on one request before it is killed
    (what ``gunicorn.conf.py`` gives gunicorn; ``settings.WEB_TIMEOUT`` reads it the same way,
    ``tests/unit/test_timeouts.py`` checks that they agree)."""
    return env.int("WEB_TIMEOUT", DEFAULT_WEB_TIMEOUT, minimum=MIN_WEB_TIMEOUT)


def default_deadline(worker_timeout: int) -> int:
    """``REQUEST_DEADLINE`` unless set: two thirds of the worker timeout, leaving a third for a
    save that started just before the deadline to finish and answer."""
    return worker_timeout * 2 // 3


def checked_deadline(deadline: int, worker_timeout: int) -> int:
    """``deadline`` when it is below ``worker_timeout``; else start-up stops naming both."""
    if deadline >= worker_timeout:
        raise ImproperlyConfigured(
            f"REQUEST_DEADLINE={deadline} must be below WEB_TIMEOUT={worker_timeout}: the "
            "product must answer before gunicorn kills the worker"
        )
    return deadline
