"""The API plumbing that knows no app: parsing, rendering, pagination, strict fields and
queries, throttling, the schema hooks and the one exception handler (``errors``)."""
