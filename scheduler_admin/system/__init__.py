"""Operational plumbing: worker heartbeats and health."""
