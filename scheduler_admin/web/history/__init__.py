"""History page: config revisions, diff of any two, revert."""
