"""The partition settings page: every setting of a partition, with an edit form for admins."""
