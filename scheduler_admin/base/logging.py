"""Log lines that say which request, user, partition and run they belong to (issue 16).

``LOG_FORMAT=json`` prints one JSON object per line (``JsonFormatter``): ``time`` (UTC, ISO 8601
with milliseconds), ``level``, ``logger``, ``message``, and, when known, ``request_id``,
``user``, ``partition``, ``run_id``, ``task`` and ``task_id``, plus ``exception`` with the
traceback. ``LOG_FORMAT=plain`` (the default, and ``make run``'s) keeps the one-line text format.

Where the fields come from: a ``ContextVar`` holds the current fields and, during a request, the
request itself.

- ``middleware.RequestContextMiddleware`` starts a context per request (``start_request``; it
  ends with Django's ``request_finished``): the request id (the ``X-Request-ID`` header when it
  is sane, else a new one; returned in the response header), the partition and run named by the
  URL, and the request, from which ``user`` is read at logging time once authentication has
  happened (Django's middleware for sessions, DRF's for tokens).
- Celery tasks: ``apps.ObservabilityConfig`` opens a context per task (``task``, ``task_id``)
  from Celery's ``task_prerun``/``task_postrun`` signals; a run's task adds ``run_id`` and
  ``partition`` with ``run_context``.
- ``ContextFilter`` (on the console handler) copies the fields onto every record, whichever
  logger made it, so the formatter needs no knowledge of requests or tasks.

Nothing here reads settings or the database at import time: ``gunicorn.conf.py`` imports the
formatter before Django is set up.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

#: The context fields, in the order a JSON line lists them.
FIELDS = ("request_id", "user", "partition", "run_id", "task", "task_id")

#: Never mutated: every change sets a new mapping, so a context's fields cannot leak into another.
_fields: ContextVar[Mapping[str, object]] = ContextVar(
    "scheduler_admin_log_fields", default=MappingProxyType({})
)
_request: ContextVar[Any] = ContextVar("scheduler_admin_log_request", default=None)


@contextmanager
def log_context(**fields: object) -> Iterator[None]:
    """Add ``fields`` to every log line made inside the block (nested blocks add to it)."""
    token = _fields.set({**_fields.get(), **fields})
    try:
        yield
    finally:
        _fields.reset(token)


def open_context(**fields: object) -> Token[Mapping[str, object]]:
    """``log_context`` for code that cannot wrap a block (Celery's prerun/postrun signals):
    returns the token ``close_context`` takes."""
    return _fields.set({**_fields.get(), **fields})


def close_context(token: Token[Mapping[str, object]]) -> None:
    _fields.reset(token)


def bind(**fields: object) -> None:
    """Add ``fields`` to the current context, until the enclosing ``log_context`` ends."""
    _fields.set({**_fields.get(), **fields})


def start_request(request: Any, **fields: object) -> None:
    """The context of one request, replacing whatever was there; ``user`` is read from the
    request when a line is logged. It lasts until ``end_request`` (Django's ``request_finished``,
    sent when the answer has been sent), not just until the middleware returns: Django logs a
    4xx or 5xx answer (``django.request``) after the middleware chain has returned."""
    _fields.set(MappingProxyType(dict(fields)))
    _request.set(request)


def end_request(**_: object) -> None:
    """Forget the request's context (a signal receiver: ``request_started`` too, in case a
    previous request of this thread never finished)."""
    _fields.set(MappingProxyType({}))
    _request.set(None)


def current_fields() -> dict[str, object]:
    """The fields known now (the request's user included, if it is known yet)."""
    fields = dict(_fields.get())
    request = _request.get()
    if request is not None and "user" not in fields:
        user = _known_user(request)
        if user:
            fields["user"] = user
    return fields


def _known_user(request: Any) -> str:
    """The signed-in user's name, without authenticating anyone: Django's middleware puts a lazy
    object on the request that is resolved when something first asks (the view, or
    ``LoginRequiredMiddleware``), and DRF puts the real user there once its authentication ran.
    A user nobody has asked for yet is not looked up here (a log line never costs a query)."""
    from django.utils.functional import LazyObject, empty

    user = request.__dict__.get("user")
    if isinstance(user, LazyObject):
        user = user._wrapped
        if user is empty:
            return ""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    return str(user.get_username())


class ContextFilter(logging.Filter):
    """Copy the context's fields onto each record (never overwriting a field the call passed
    with ``extra=``); lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in current_fields().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; a message or traceback with newlines stays on its line (JSON
    escapes them). Values that are not JSON types are written as text."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value not in (None, ""):
                body[name] = value
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            body["stack"] = self.formatStack(record.stack_info)
        return json.dumps(body, ensure_ascii=False, default=str)
