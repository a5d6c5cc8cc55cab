"""gunicorn's settings file. gunicorn reads ``./gunicorn.conf.py`` from its working directory by
itself, so every web process of the project gets it with its unchanged command: compose's web
(``/app``), ``make run`` and the tests (the checkout). Command-line flags still win.

- ``child_exit``: a gunicorn worker that exits is marked dead for Prometheus's multiprocess
  files (``scheduler_admin.base.metrics.mark_dead``).
- With ``LOG_FORMAT=json``, gunicorn's own lines (its error log and, when on, the access log)
  are JSON objects like the product's (``logger_class``), so the output stays one object per line.
- ``timeout``: the worker timeout is ``WEB_TIMEOUT`` (default 120 s), parsed as the product's
  settings parse it (``scheduler_admin.base.timeouts``): a bad value stops gunicorn naming it. The
  product's own deadline (``REQUEST_DEADLINE``) is below it, so a long request answers (503,
  nothing saved) before the worker would be killed without an answer.
"""

from __future__ import annotations

import os
from typing import Any

from gunicorn.glogging import Logger

from scheduler_admin.base.env import Env
from scheduler_admin.base.timeouts import web_timeout

timeout = web_timeout(Env())


def child_exit(server: Any, worker: Any) -> None:
    from scheduler_admin.base.metrics import mark_dead

    mark_dead(worker.pid)


class JsonLogger(Logger):
    """gunicorn's logger with the product's JSON formatter on each of its handlers."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        from scheduler_admin.base.logging import JsonFormatter

        formatter = JsonFormatter()
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)


# Request lines up to 1 MiB (gunicorn's "0": its own hard cap). Its default, 4094 bytes, answered
# an HTML 414 to URLs the API schema allows (a 2,000-character comment in a query string is up
# to 24 KB percent-encoded); the application refuses URLs over limits.URL_MAX_BYTES itself, with
# the API's JSON error body.
limit_request_line = 0

if os.environ.get("LOG_FORMAT", "").strip().lower() == "json":
    logger_class = JsonLogger
