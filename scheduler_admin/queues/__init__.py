"""Partitions, the queue tree and its revision history."""
