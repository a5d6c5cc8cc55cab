"""The domain errors: the few kinds of refusal every app raises, and the interfaces map once.

A service says *what kind* of refusal it met, never how to answer it:

- ``NotFound``: the object named does not exist (a partition, a timer, a grant, an order).
- ``Stale``: the caller edited an older version than the one saved now; ``current`` is that one.
- ``Conflict``: the object is in a state that rules the change out (a run that already ended);
  ``code`` names the state for API clients.
- ``Invalid``: the input is wrong; ``errors`` maps each field path to its messages.
- ``TooLarge``: the input is over a size limit (a config over ``CONFIG_MAX_BYTES``).
- ``Forbidden``: the account may not do this; ``reason`` says why.

Apps subclass these (``queues.services.StaleVersion``, ``enforcement.timers.TimerNotFound``,
``cluster.services.IngestErrors`` ...) to keep their own names for their callers. The API's one
exception handler (``base.api.errors.exception_handler``) turns each kind into its status and
the one error body; the console's ``base.middleware.DomainErrorMiddleware`` turns it into an
error page. Neither knows an app's exception, so neither imports an app.

``NotFound`` is also Django's ``Http404`` and ``Forbidden`` Django's ``PermissionDenied``: code
that already answers those (DRF, Django's error handlers, the console's live views) answers
the domain kinds the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import PermissionDenied
from django.http import Http404


class DomainError(Exception):
    """A refusal a service raises; nothing was written."""


class NotFound(DomainError, Http404):
    """The object named does not exist (HTTP 404)."""


class Stale(DomainError):
    """The caller edited version ``current - n``; ``current`` is the one saved now (HTTP 409)."""

    def __init__(self, message: str, *, current: int) -> None:
        super().__init__(message)
        self.current = current


class Conflict(DomainError):
    """The object's state rules the change out (HTTP 409); ``code`` names that state."""

    code = "conflict"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class Invalid(DomainError, ValueError):
    """The input is wrong (HTTP 400). ``errors`` maps each field path to its messages; built
    from one message, it is filed under ``field`` (``non_field_errors`` when the change itself
    is refused). ``detail`` is the one-line summary the API's body starts with.

    Also a ``ValueError``, as the app errors it replaced were."""

    detail = "The request is not valid."

    def __init__(self, errors: Mapping[str, list[str]] | str, *, field: str = "") -> None:
        if isinstance(errors, str):
            message = errors
            errors = {field or "non_field_errors": [message]}
        else:
            message = "; ".join(f"{path}: {', '.join(msgs)}" for path, msgs in errors.items())
        super().__init__(message)
        self.errors: dict[str, list[str]] = dict(errors)
        self.field = field


class TooLarge(DomainError):
    """The input is over a size limit (HTTP 413). A marker: the engine's ``ConfigErrors`` of an
    oversized config carries it beside its field errors (``queues.yaml_io.ConfigTooLarge``)."""


class Forbidden(DomainError, PermissionDenied):
    """The account may not do this (HTTP 403); the message is the reason shown to the reader
    ("This action needs the admin role.")."""

    @property
    def reason(self) -> str:
        return str(self.args[0]) if self.args else ""
