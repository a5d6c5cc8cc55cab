"""Builders of the set-ups many tests share: users with roles, grants and tokens; partitions
from a queue tree; cluster tasks and their ingestion; quota changes that start timers.

Plain functions that go through the product's own services (``save_partition_config``,
``ingest_cluster_state``, ``give_grant``...) rather than factory_boy model factories: the state a
test starts from is then exactly what the product writes (revisions, timers, audit rows), which a
factory writing rows directly would have to repeat. Each function does one step; a test composes
them (``tests/support/team.py`` and ``tenants.py`` are such compositions).

- ``users``: ``give_role``, ``user_with_role``, ``role_user``, ``token_key``.
- ``partitions``: ``saved_partition``, ``imported_partition``, ``lower_max``.
- ``cluster``: ``task``, ``one_node``, ``ingest``.
"""
