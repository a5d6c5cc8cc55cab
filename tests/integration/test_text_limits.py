"""Every text the cluster-state API accepts fits where it is stored (issue 11, item 2).

One limit per kind of text (``base.limits``), used by the ingest checker and by every
column the text ends up in: the cluster's own rows, the runs' victims and eviction orders, and
the audit events about them. The end-to-end test pushes every kind of id at its maximum length
(in multi-byte characters, so byte lengths are no excuse either), lets a quota run preempt them
and checks that the run finishes with its eviction orders and audit events carrying the full
ids; one character more is refused at the edge.
"""

from __future__ import annotations

from datetime import timedelta
from hashlib import sha256

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.db import models

from preemption.model import Outcome, PolicyName, PreemptionPolicy, QoS, Reason
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.audit.chain import HASH_LENGTH
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.base import limits
from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    AskState,
    DisruptionBudget,
    DynamicQueue,
    Node,
)
from scheduler_admin.cluster.services import IngestErrors, ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import acknowledge_eviction
from scheduler_admin.enforcement.models import (
    ClusterStatus,
    EvictionOrder,
    EvictionOutcome,
    EvictionStatus,
    PreemptionRun,
    QueueLock,
    QuotaTimer,
    RunCandidate,
    RunStatus,
    RunVictim,
    TimerStatus,
)
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from tests.support.factories.partitions import saved_partition
from tests.support.team import GB, START, team_config

# Each column that stores text received by the API, the ingest command or the agent, or
# derived from it, and the limit it must share with the edge.
LIMITED = {
    (Node, "name"): limits.CLUSTER_ID_MAX_LENGTH,
    (Application, "external_id"): limits.CLUSTER_ID_MAX_LENGTH,
    (Application, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (Application, "user"): limits.CLUSTER_USER_MAX_LENGTH,
    (Allocation, "external_id"): limits.CLUSTER_ID_MAX_LENGTH,
    (Allocation, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (Allocation, "node_name"): limits.CLUSTER_ID_MAX_LENGTH,
    (Allocation, "required_node"): limits.CLUSTER_ID_MAX_LENGTH,
    (Allocation, "job"): limits.CLUSTER_ID_MAX_LENGTH,
    (Allocation, "pdb"): limits.CLUSTER_ID_MAX_LENGTH,
    (Ask, "external_id"): limits.CLUSTER_ID_MAX_LENGTH,
    (Ask, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (Ask, "required_node"): limits.CLUSTER_ID_MAX_LENGTH,
    (Ask, "job"): limits.CLUSTER_ID_MAX_LENGTH,
    (Ask, "node"): limits.CLUSTER_ID_MAX_LENGTH,
    (DisruptionBudget, "name"): limits.CLUSTER_ID_MAX_LENGTH,
    (AuditEvent, "actor_name"): limits.USERNAME_MAX_LENGTH,
    (AuditEvent, "partition_name"): limits.PARTITION_NAME_MAX_LENGTH,
    (AuditEvent, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (AuditEvent, "object_id"): limits.AUDIT_OBJECT_ID_MAX_LENGTH,
    (QuotaTimer, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (QueueLock, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (PreemptionRun, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (PreemptionRun, "trigger_id"): limits.CLUSTER_ID_MAX_LENGTH,  # an ask id or a job name
    (PreemptionRun, "node"): limits.CLUSTER_ID_MAX_LENGTH,
    (RunVictim, "allocation_id"): limits.CLUSTER_ID_MAX_LENGTH,
    (RunVictim, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (RunVictim, "node_name"): limits.CLUSTER_ID_MAX_LENGTH,
    (EvictionOrder, "allocation_id"): limits.CLUSTER_ID_MAX_LENGTH,
    (EvictionOrder, "node_name"): limits.CLUSTER_ID_MAX_LENGTH,
    (EvictionOrder, "acknowledged_by"): limits.ACKNOWLEDGED_BY_MAX_LENGTH,
    (RunCandidate, "candidate"): limits.CLUSTER_ID_MAX_LENGTH,
    (RunCandidate, "queue_path"): limits.QUEUE_PATH_MAX_LENGTH,
    (RunCandidate, "application"): limits.CLUSTER_ID_MAX_LENGTH,
    (RunCandidate, "node_name"): limits.CLUSTER_ID_MAX_LENGTH,
    (RunCandidate, "budget"): limits.CLUSTER_ID_MAX_LENGTH,
    (RunCandidate, "required_node"): limits.CLUSTER_ID_MAX_LENGTH,
    (ClusterAgent, "name"): limits.AGENT_NAME_MAX_LENGTH,
    (ClusterAgent, "cluster"): limits.AGENT_CLUSTER_MAX_LENGTH,
    (ClusterAgent, "version"): limits.AGENT_VERSION_MAX_LENGTH,
    (DynamicQueue, "path"): limits.QUEUE_PATH_MAX_LENGTH,
}
# The product's own vocabularies: each column holds the longest of its words.
VOCABULARIES = {
    (Allocation, "qos"): [q.value for q in QoS],
    (Allocation, "state"): AllocationState.values,
    (Ask, "preemption_policy"): [p.value for p in PreemptionPolicy],
    (Ask, "state"): AskState.values,
    (AuditEvent, "kind"): AuditKind.values,
    (AuditEvent, "object_type"): ["cluster-state", "config", "eviction", "run", "timer", "agent"],
    (QuotaTimer, "status"): TimerStatus.values,
    (PreemptionRun, "policy"): [p.value for p in PolicyName],
    (PreemptionRun, "trigger"): ["quota_timer", "ask", "job"],
    (PreemptionRun, "status"): RunStatus.values,
    (PreemptionRun, "outcome"): [o.value for o in Outcome],
    (EvictionOrder, "status"): EvictionStatus.values,
    (EvictionOrder, "outcome"): EvictionOutcome.values,
    (EvictionOrder, "cluster_status"): ClusterStatus.values,
    (RunCandidate, "reason"): [r.value for r in Reason],
    (RunCandidate, "qos"): [q.value for q in QoS],
}
# Not input: the worker's host name as Celery reports it.
OTHER = {(PreemptionRun, "worker")}
# Not input: the audit hash chain's SHA-256 digests, in hex (empty until the row is sealed).
DIGESTS = {
    (AuditEvent, name)
    for name in ("content_hash", "prev_hash", "hash", "partition_prev_hash", "partition_hash")
}
MODELS = [
    Node, Application, Allocation, Ask, DisruptionBudget, AuditEvent,
    QuotaTimer, QueueLock, PreemptionRun, RunVictim, RunCandidate, EvictionOrder, ClusterAgent,
    DynamicQueue,
]  # fmt: skip


def char_columns() -> set[tuple[type[models.Model], str]]:
    return {
        (model, f.name)
        for model in MODELS
        for f in model._meta.concrete_fields
        if isinstance(f, models.CharField)
    }


def test_every_text_column_is_classified():
    """A new text column must say which limit it shares with the edge (or what it holds)."""
    assert char_columns() == set(LIMITED) | set(VOCABULARIES) | OTHER | DIGESTS


@pytest.mark.parametrize("column", sorted(DIGESTS, key=str), ids=lambda v: str(v))
def test_each_digest_column_holds_one_hex_sha256(column):
    model, name = column
    assert model._meta.get_field(name).max_length == HASH_LENGTH == len(sha256().hexdigest())


@pytest.mark.parametrize(("column", "limit"), LIMITED.items(), ids=lambda v: str(v))
def test_each_column_is_as_long_as_its_limit(column, limit):
    model, name = column
    assert model._meta.get_field(name).max_length == limit


@pytest.mark.parametrize(("column", "words"), VOCABULARIES.items(), ids=lambda v: str(v))
def test_each_vocabulary_column_holds_its_longest_word(column, words):
    model, name = column
    assert model._meta.get_field(name).max_length >= max(len(word) for word in words)


def test_an_audit_event_can_name_any_allocation():
    assert limits.AUDIT_OBJECT_ID_MAX_LENGTH >= limits.CLUSTER_ID_MAX_LENGTH
    assert len(" (simulator)") <= limits.ACKNOWLEDGED_BY_MAX_LENGTH - limits.USERNAME_MAX_LENGTH


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture
def team(db) -> Partition:
    """The team partition (tests.support.team), without tasks."""
    with time_machine.travel(START, tick=False):
        return saved_partition(team_config("2s"), comment="team")


def longest(prefix: str, limit: int = limits.CLUSTER_ID_MAX_LENGTH) -> str:
    """A name of exactly ``limit`` characters, mostly multi-byte (up to 4 bytes each)."""
    return (prefix + "-" + "é🚀ü" * limit)[:limit]


NODE = longest("node")
USER = longest("user", limits.CLUSTER_USER_MAX_LENGTH)
JOB = longest("job")
PDB = longest("pdb")


def long_task(n: int, queue: str, memory_gb: int, **extra) -> dict:
    return {
        "id": longest(f"ns-{n}/pod"), "queue": queue, "node": NODE, "app": longest(f"app-{n}"),
        "user": USER, "job": JOB, "pdb": PDB, "resources": {"memory": f"{memory_gb}G"},
        "created_at": f"2026-03-01T10:0{n}:00Z", **extra,
    }  # fmt: skip


def test_ids_of_the_maximum_length_go_through_a_whole_quota_run(team):
    """Longest ids everywhere: the run preempts them, writes its victims, eviction orders and
    audit events with the full ids, and the evictions are acknowledged by a user with the
    longest user name."""
    with time_machine.travel(START, tick=False):
        body = {
            "nodes": [{"name": NODE, "capacity": {"memory": "1000G", longest("example.com/gpu",
                       limits.RESOURCE_NAME_MAX_LENGTH): 8}}],
            "allocations": [
                long_task(1, "root.team.a", 30, priority=limits.INT32_MAX),
                long_task(2, "root.team.a", 30, priority=limits.INT32_MIN),
                long_task(3, "root.team.b", 40, required_node=NODE),
                long_task(4, "root.team.b", 40),
            ],
            "asks": [{"id": longest("ask"), "queue": "root.team.b", "app": longest("app-4"),
                      "user": USER, "job": JOB, "node": NODE, "resources": {"memory": "1G"}}],
            "budgets": [{"name": PDB, "allowed_disruptions": limits.POSITIVE_INT_MAX}],
        }  # fmt: skip
        result = ingest_cluster_state(team, body, actor=None)
    assert result.changed["allocations"]["created"] == 4
    assert Application.objects.get(external_id=longest("app-1")).user == USER
    assert Allocation.objects.get(external_id=longest("ns-1/pod")).priority == limits.INT32_MAX

    with time_machine.travel(START, tick=False):
        version = Queue.objects.get(path="root.team").version
        config_services.update_queue(
            "default", "root.team", version=version, actor=None, comment="lower",
            max={"memory": 60 * GB},
        )  # fmt: skip
    [run_id] = runs.sweep_due_quota_timers(now=START + timedelta(seconds=2))
    run = runs.execute_run(run_id, worker="t")
    assert run is not None and run.status == RunStatus.FINISHED, run and run.error

    victims = set(run.victims.values_list("allocation_id", flat=True))
    assert victims and all(len(v) == limits.CLUSTER_ID_MAX_LENGTH for v in victims)
    orders = EvictionOrder.objects.filter(run=run)
    assert set(orders.values_list("allocation_id", flat=True)) == victims
    assert set(orders.values_list("node_name", flat=True)) == {NODE}
    preempted = AuditEvent.objects.filter(kind=AuditKind.VICTIM_PREEMPTED)
    assert set(preempted.values_list("object_id", flat=True)) == victims
    assert AuditEvent.objects.filter(kind=AuditKind.RUN_FINISHED, object_id=str(run.pk)).exists()
    daemon = run.candidates.get(candidate=longest("ns-3/pod"))  # the record keeps every full id
    assert (daemon.application, daemon.node_name, daemon.budget, daemon.required_node) == (
        longest("app-3"), NODE, PDB, NODE,
    )  # fmt: skip

    admin = get_user_model().objects.create_user("a" * limits.USERNAME_MAX_LENGTH)
    for order in orders:
        acknowledge_eviction(order.pk, actor=admin, via="simulator")
    assert set(orders.values_list("acknowledged_by", flat=True)) == {
        f"{'a' * limits.USERNAME_MAX_LENGTH} (simulator)"
    }
    assert set(
        Allocation.objects.filter(external_id__in=victims).values_list("state", flat=True)
    ) == {AllocationState.RELEASED}


LONGER = limits.CLUSTER_ID_MAX_LENGTH + 1


@pytest.mark.parametrize(
    ("item", "path"),
    [
        ({"nodes": [{"name": "n" * LONGER}]}, "nodes[0].name"),
        ({"nodes": [{"name": "n", "capacity": {"g" * (limits.RESOURCE_NAME_MAX_LENGTH + 1): 1}}]},
         "nodes[0].capacity"),
        ({"allocations": [{"id": "a" * LONGER}]}, "allocations[0].id"),
        ({"allocations": [{"app": "a" * LONGER}]}, "allocations[0].app"),
        ({"allocations": [{"user": "u" * (limits.CLUSTER_USER_MAX_LENGTH + 1)}]},
         "allocations[0].user"),
        ({"allocations": [{"node": "n" * LONGER}]}, "allocations[0].node"),
        ({"allocations": [{"required_node": "n" * LONGER}]}, "allocations[0].required_node"),
        ({"allocations": [{"job": "j" * LONGER}]}, "allocations[0].job"),
        ({"allocations": [{"pdb": "p" * LONGER}]}, "allocations[0].pdb"),
        ({"allocations": [{"queue": "q" * (limits.QUEUE_PATH_MAX_LENGTH + 1)}]},
         "allocations[0].queue"),
        ({"asks": [{"id": "a" * LONGER}]}, "asks[0].id"),
        ({"asks": [{"user": "u" * (limits.CLUSTER_USER_MAX_LENGTH + 1)}]}, "asks[0].user"),
        ({"asks": [{"node": "n" * LONGER}]}, "asks[0].node"),
        ({"asks": [{"job": "j" * LONGER}]}, "asks[0].job"),
        ({"budgets": [{"name": "b" * LONGER}]}, "budgets[0].name"),
        ({"remove": {"allocations": ["a" * LONGER]}}, "remove.allocations[0]"),
        ({"remove": {"nodes": ["n" * LONGER]}}, "remove.nodes[0]"),
        ({"remove": {"asks": ["a" * LONGER]}}, "remove.asks[0]"),
    ],
)  # fmt: skip
def test_one_character_more_is_a_field_error(team, item, path):
    base = {"id": "t1", "queue": "root.team.a", "node": "n1"}
    for kind in ("allocations", "asks"):
        if kind in item:
            item = {kind: [{**base, **item[kind][0]}], "nodes": [{"name": "n1"}]}
    with pytest.raises(IngestErrors) as refused:
        ingest_cluster_state(team, item, actor=None)
    assert path in refused.value.errors, refused.value.errors
    assert not Allocation.objects.exists() and not Node.objects.exists()
    assert Partition.objects.count() == 1
