"""Scheduled changes in the console (SPEC 6): their list on the queue page and the dashboard,
the edit form's "apply at", and the Cancel button."""
