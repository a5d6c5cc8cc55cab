"""The live loop: quota timers, preemption runs with per-queue locks, eviction orders."""
