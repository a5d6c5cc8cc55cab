"""REST API plumbing shared by every app's ``api`` package (SPEC 7): errors, roles, pagination,
throttling and optimistic-concurrency helpers."""
