"""Unit tests that run without Django."""
