"""Runs and audit pages: filterable lists, run detail with explanations, exports."""
