"""``python -m scheduler_admin.bench``: the product at scale (issue 14).

One run builds a scratch PostgreSQL database with 5,059 queues, 2,000 nodes and 200,000 running
tasks, then measures each row of the scale table next to a baseline measured in the same run on
the same data, and prints the ratio. Numbers are judged as ratios where the machine is busy: a
baseline is the floor the same work could reach (a bare view, the same decisions on one state, a
raw transaction, a plain sort), so a loaded machine slows both.

A measurement tool, not a test: it prints numbers and asserts nothing. ``--only SECTION`` runs
one section (``api``, ``runs``, ``acks``, ``engine``, ``config``: the largest config the size cap
allows, imported and replaced; ``ingest``: cluster-state pushes, up to a 200,000-allocation
replacement); ``--keep`` keeps the database.
"""
