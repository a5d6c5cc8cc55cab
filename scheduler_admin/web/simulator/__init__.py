"""Simulator page: plan a quota change, an ask or a job without saving anything."""
