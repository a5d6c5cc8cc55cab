"""The shape of the in-write authorization a queues service calls first in its transaction.

Defined here, by the lowest app whose services take one, so that queues does not import the
accounts app above it; ``accounts.permissions.authorizer`` builds the checks that fit it (and
re-exports the name for the apps above).
"""

from __future__ import annotations

from typing import Protocol

from scheduler_admin.queues.models import Partition


class Authorize(Protocol):
    """The in-write authorization a service calls first in its transaction (``authorizer``):
    ``partition`` None for a partition the write creates; ``exclusive`` is the partition lock
    the write needs (``lock_order``, level 2)."""

    def __call__(self, partition: Partition | None, /, *, exclusive: bool = True) -> None: ...
