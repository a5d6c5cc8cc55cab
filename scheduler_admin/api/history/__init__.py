"""The usage history over REST: one read per queue (``queues/{path}/usage``)."""
