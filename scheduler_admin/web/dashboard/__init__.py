"""Dashboard: partition switcher, queue tree with usage bars, timers, alerts, recent runs."""
