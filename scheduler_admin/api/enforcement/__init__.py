"""REST API of the enforcement app."""
