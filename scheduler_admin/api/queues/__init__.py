"""REST API of the queues app."""
