"""Helpers shared by tests: kept out of conftest.py so that tests import them explicitly."""
