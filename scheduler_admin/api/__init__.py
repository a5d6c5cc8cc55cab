"""The REST API as an interface (SPEC 7): its composition (``urls``, ``navigation``), the base
views and the role permission every endpoint uses, and every app's endpoints, one package per
app (``queues/``, ``cluster/``, ``enforcement/``, ``history/``, ``agents/``, ``audit/``; ``tokens``
and ``grants`` for accounts). The plumbing that knows no app (parsers, pagination, strict
fields, throttling, the error handler) is in ``scheduler_admin.base.api``."""
