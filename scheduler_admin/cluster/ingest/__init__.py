"""Ingesting cluster state (SPEC 3.3 and 7 ``cluster-state``): a pushed body, parsed, then written.

The body speaks the scenario files' vocabulary::

    {"nodes": [...], "allocations": [...], "asks": [...], "budgets": [...],
     "remove": {"nodes": [names], "allocations": [ids], "asks": [ids], "budgets": [names]},
     "replace": false}

``"replace": true`` makes the body the partition's whole state: every node, allocation, ask and
budget it does not list is removed (and the applications left without tasks or asks), as a
cluster agent that has just listed everything sends it. Without it a push only adds, changes
and removes what it names.

Everything is checked first and every problem is reported with its path
(``allocations[3].resources.memory``); only a clean body is written, in one transaction, with
upserts keyed by the cluster's ids — so sending the same body twice changes nothing. Every text
and integer the checker accepts fits its column (``scheduler_admin.base.limits``).

Only new and changed rows are written, and a ``state.ingested`` audit event is recorded only
when something changed, with the counts of what did (``IngestResult.changed``).

Where each part lives:

- ``parsing``: ``parse_cluster_state``, the body into a ``ClusterStateBody`` or one
  ``IngestErrors`` naming every problem by path; ``checker`` holds the typed readers it uses;
- ``writing``: ``write_state`` and ``remove_state``, the comparison with what is stored and
  the writes of what changed, counted in an ``IngestResult``; ``rows`` holds the bulk reads and
  upserts they run;
- ``scheduler_admin.cluster.services.ingest_cluster_state``: the use case, one transaction with
  its locks and audit event, composing the two.

Allocation state: a new allocation is ``running`` unless the body says ``preempting``. An
existing allocation keeps the state the product gave it (a victim stays ``preempting`` until its
eviction is acknowledged) unless the body names a state explicitly.
"""
