"""Integration tests: real PostgreSQL, Redis, Celery and gunicorn processes on loopback."""
