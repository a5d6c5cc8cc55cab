"""The demo cluster (SPEC 3.3): a realistic cluster, kept alive by churn, for ``make run``.

No real cluster is connected to the demo, so ``manage.py simulate_cluster`` plays one. A demo
cluster is not cluster state: this app only *produces* cluster-state bodies in the vocabulary of
``scheduler_admin.cluster.services.ingest_cluster_state``, which does every write, and
acknowledges evictions through ``enforcement.evictions`` as a cluster would. It sits with the
interfaces (it may import every app; no app imports it). Not to be confused with the console's
simulator page (``web.simulator``), which plans a what-if on the stored state.

- ``layout``: the queue tree as the demo sees it, and where a task fits (``Placer``);
- ``items``: an ingest body's allocation and ask items, and the shared random draws;
- ``build``: ``initial_cluster``, the body of a whole new cluster;
- ``snapshot``: ``read_snapshot`` (its one read of the database) and the printed summary;
- ``churn``: ``churn_step``, the next body from a snapshot: tasks finish and start, asks are
  scheduled, evicted pods come back as asks;
- ``management/commands/simulate_cluster.py``: builds, then churns and acknowledges evictions.

The same inputs (queue config, seed or ``random.Random``, ``now``) always give the same body.
"""
