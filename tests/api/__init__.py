"""REST API tests: every endpoint, every role."""
