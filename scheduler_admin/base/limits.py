"""How long each kind of text and how large each integer may be: one limit per kind of value.

Every limit here is used twice, at the edge (serializers, forms, the cluster-state checker,
config validation) and in the database (``max_length`` of the column, the column's integer
type), so a value the API accepts always fits where it is stored. A value that would not fit is
a field error at the edge, never a database error half-way through a run or a save.
"""

from __future__ import annotations

#: Ids of cluster objects: allocations, asks, applications, nodes, jobs, budgets. Kubernetes
#: object names are DNS subdomains of at most 253 characters.
CLUSTER_ID_MAX_LENGTH = 253
#: A cluster user (the ``user`` of an application). Kubernetes user names are free text; this
#: is as long as an id, which covers service accounts (``system:serviceaccount:ns:name``).
CLUSTER_USER_MAX_LENGTH = 253
#: A Django user name (audit actors, revision authors, acknowledgers): Django's own limit.
USERNAME_MAX_LENGTH = 150
#: A partition name and one queue name (YuniKorn: ``^[a-zA-Z0-9_:#/@-]{1,64}$``).
PARTITION_NAME_MAX_LENGTH = 64
QUEUE_NAME_MAX_LENGTH = 64
#: A full queue path (``root.a.b``); config validation refuses a tree whose paths are longer.
QUEUE_PATH_MAX_LENGTH = 1024
#: The id of the object an audit event is about (a run or revision number, an allocation id).
AUDIT_OBJECT_ID_MAX_LENGTH = CLUSTER_ID_MAX_LENGTH
#: A resource name (``memory``, ``vcore``, ``nvidia.com/gpu``): a Kubernetes qualified name, an
#: optional DNS-subdomain prefix (253), ``/`` and a name (63). Stored inside JSON resource sets.
RESOURCE_NAME_MAX_LENGTH = 253 + 1 + 63
#: Who acknowledged an eviction and how: a user name and the channel, ``"ann (api)"``.
ACKNOWLEDGED_BY_MAX_LENGTH = USERNAME_MAX_LENGTH + 32
#: A Celery worker's node name (``celery@host``), as recorded on runs and heartbeats. Names
#: are the operator's choice and may be longer: they are cut to fit, never refused.
WORKER_NAME_MAX_LENGTH = 200
#: A change comment.
COMMENT_MAX_LENGTH = 2000
#: The longest URL (path and query string, as sent: percent-encoded) the API reads; longer is a
#: 414 with the API's error body. Above every URL the OpenAPI schema allows (each text at most
#: ``api.schema.QUERY_TEXT_MAX_LENGTH`` characters, each character at most 12 bytes encoded), so
#: no valid request is refused for its length. gunicorn reads request lines up to 1 MiB
#: (``limit_request_line = 0`` in gunicorn.conf.py), so this answers first.
URL_MAX_BYTES = 128 * 1024
#: A queue property key or value.
PROPERTY_MAX_LENGTH = 256

#: PostgreSQL ``integer`` (Django ``IntegerField``): task priorities (Kubernetes priorities are
#: int32 as well).
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
#: PostgreSQL ``integer`` with a ``>= 0`` check (Django ``PositiveIntegerField``): versions,
#: revision numbers, allowed disruptions, delays in seconds.
POSITIVE_INT_MAX = INT32_MAX
#: PostgreSQL ``bigint`` (Django ``BigAutoField``): row ids.
BIGINT_MAX = 2**63 - 1
#: The longest duration (a preemption delay, ``quota.preemption.delay``), in seconds: about 68
#: years. Delays are stored in ``integer`` columns and added to timestamps. Mirrored by
#: ``preemption.durations.MAX_DURATION`` (the engine imports nothing of Django).
DURATION_MAX_SECONDS = POSITIVE_INT_MAX

#: The deepest nesting of lists and objects in a request body (JSON) or a ``queues.yaml``: the
#: product's documents are at most a few levels deep (a YAML queue tree takes two per queue
#: level), and deeper ones are refused before anything walks them. Mirrored by
#: ``preemption.config.DOCUMENT_MAX_DEPTH``.
DOCUMENT_MAX_DEPTH = 64

#: The engine tunables: partition settings, and what-if values of the simulate API and the
#: simulator page (kept within what a plan can use). Mirrored by
#: ``preemption.config.MAX_DEVIATION_PERCENT`` and ``MAX_VICTIMS_LIMIT``.
DEVIATION_PERCENT_MAX = 1000
MAX_VICTIMS_MAX = 10_000
#: The highest pace of eviction orders a partition may set (mirrors
#: ``preemption.config.MAX_EVICTIONS_PER_MINUTE_LIMIT``; 0 is unlimited).
MAX_EVICTIONS_PER_MINUTE_MAX = 100_000

#: Most eviction orders one bulk acknowledgement may name (``evictions/acknowledge``): a few
#: hundred KB of JSON, one transaction of a second or so.
BULK_ACK_MAX_ORDERS = 10_000

#: What the cluster says about an eviction it could not carry out yet (``cluster_reason``), and
#: an agent's last error: messages of the Kubernetes API, kept whole up to this length and cut
#: beyond it (never refused: an agent must be able to report whatever the cluster answered).
CLUSTER_MESSAGE_MAX_LENGTH = 2000
#: A cluster agent's name (by default its host name: a pod name, a DNS subdomain), the cluster
#: it watches (a kubeconfig context name) and its version.
AGENT_NAME_MAX_LENGTH = CLUSTER_ID_MAX_LENGTH
AGENT_CLUSTER_MAX_LENGTH = CLUSTER_ID_MAX_LENGTH
AGENT_VERSION_MAX_LENGTH = 64
#: Most eviction orders one report may name (``evictions/report``), as for acknowledgements.
BULK_REPORT_MAX_ORDERS = BULK_ACK_MAX_ORDERS


def cap_text(text: str, limit: int = CLUSTER_MESSAGE_MAX_LENGTH) -> str:
    """``text`` cut to ``limit`` characters (the last one an ellipsis) when longer: for what a
    cluster says (an eviction refused, an agent's error), kept rather than refused."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
