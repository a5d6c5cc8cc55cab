"""Cluster state pushed by automation or the simulator: nodes, apps, tasks, asks, budgets."""
