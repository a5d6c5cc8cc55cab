"""The log context of a Celery task working on a run (``base.logging`` holds the rest of the
request and task context; it knows no app, so the run's own fields are added here)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from scheduler_admin.base.logging import log_context
from scheduler_admin.enforcement.models import PreemptionRun


@contextmanager
def run_context(run_id: int) -> Iterator[None]:
    """The context of a Celery task working on a run: ``run_id`` and the run's partition."""
    partition = (
        PreemptionRun.objects.filter(pk=run_id).values_list("partition__name", flat=True).first()
    )
    with log_context(run_id=run_id, **({"partition": partition} if partition else {})):
        yield
