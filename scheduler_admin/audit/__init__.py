"""The append-only audit log of config changes and preemption decisions."""
