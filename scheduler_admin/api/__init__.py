"""The REST API as an interface (SPEC 7): its composition (``urls``, ``navigation``), the base
views and the role permission every app's ``api/`` uses, and the endpoints of the apps below the
permission checks (``audit/``, ``tokens``, ``grants``). The plumbing that knows no app (parsers,
pagination, strict fields, throttling, the error handler) is in ``scheduler_admin.base.api``."""
