"""Release several calls at the same instant, each in a thread of its own, for race tests.

A concurrency claim needs a real race: the threads wait on a barrier and start together, each
with its own database connection (Django's connections are per thread), closed when its call
returns so the test database can be flushed afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection

#: How long a racing call may take before the test gives up on it.
JOIN_TIMEOUT = 120.0


def release_together(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls released by one barrier; their results in call order, an exception in
    place of the result of a call that raised (the test decides whether that is a failure)."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = calls[index]()
        except BaseException as exc:  # handed to the test with the others
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    return results


def release_together_or_raise(*calls: Callable[[], Any]) -> list[Any]:
    """``release_together``, re-raising the first exception a call raised."""
    results = release_together(*calls)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results
