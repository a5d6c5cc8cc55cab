"""Preemption engine: pure standard-library planning code, no Django imports."""
