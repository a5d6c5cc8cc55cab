"""REST API of the audit app."""
