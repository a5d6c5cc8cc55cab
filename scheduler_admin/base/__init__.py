"""The base: pieces every app and interface may use, which know no app.

Limits, settings parsing, timeouts and the request deadline, the lock order, domain errors,
metrics primitives, admin mixins, the console's error pages and the API plumbing (``api/``:
parsers, renderers, pagination, strict queries and fields, throttling, the one error handler).
Nothing here imports an app, an interface or the project's settings module: an import-linter
contract (pyproject.toml) keeps it so. See ARCHITECTURE.md.
"""
