"""Queue page: effective settings and their sources, usage chart, tasks and asks, timer, edit form
with preview."""
