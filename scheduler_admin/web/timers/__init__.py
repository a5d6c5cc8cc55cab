"""Cancelling a quota timer from the console: one confirmation page for every cancel button."""
