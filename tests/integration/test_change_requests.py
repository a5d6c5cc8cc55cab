"""Approvals of changes (SPEC 6 "Approvals") through the services: which changes the
``approval`` setting holds, and approving, rejecting and withdrawing the requests."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigErrors
from scheduler_admin.accounts.approvals import request_authorizer
from scheduler_admin.accounts.permissions import APPROVE_CHANGE, EDIT_QUEUE, authorizer
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base.errors import Forbidden, Invalid
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import approval_gate, change_requests, services
from scheduler_admin.queues.models import ChangeRequest, ConfigRevision, Partition, Queue
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import GB, imported_partition
from tests.support.factories.users import user_with_role
from tests.support.team import START, TEAM_TASKS, team_config

pytestmark = pytest.mark.django_db


@pytest.fixture
def team() -> Partition:
    with time_machine.travel(START, tick=False):
        partition = imported_partition(team_config("2s"))
        ingest(partition, TEAM_TASKS)
    return partition


def set_approval(mode: str) -> None:
    services.update_partition_settings(
        "default", actor=None, comment=f"approval {mode}", approval=mode
    )


def patch(path: str, actor, **fields) -> services.SaveResult:
    version = Queue.objects.get(partition__name="default", path=path).version
    return services.update_queue(
        "default", path, version=version, actor=actor, comment="change it",
        request_approval=True, **fields,
    )  # fmt: skip


def config_of(partition: Partition) -> PartitionConfig:
    return Partition.objects.get(pk=partition.pk).current_config()


# --- which changes are held ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "held"),
    [
        ({"max": {"memory": 400}}, {"max": {"memory": 300}}, True),  # lower max
        ({"max": {"memory": 400}}, {"max": {"memory": 500}}, False),  # raise max
        ({"max": {"memory": 400}}, {"max": {}}, False),  # remove max: an increase
        ({"max": {}}, {"max": {"vcore": 10}}, True),  # add a max on a type
        ({"max": {"memory": 400}}, {"max": {"memory": 400, "vcore": 9}}, True),
        ({"guaranteed": {"memory": 20}}, {"guaranteed": {"memory": 10}}, True),  # lower guarantee
        ({"guaranteed": {"memory": 20}}, {"guaranteed": {}}, True),  # remove a guarantee
        ({"guaranteed": {"memory": 20}}, {"guaranteed": {"memory": 30}}, False),
        ({"properties": {}}, {"properties": {"preemption.policy": "fence"}}, False),
    ],
)
def test_decreases_holds_lower_or_new_maxes_and_lower_guarantees(old, new, held):
    from preemption.config import PartitionSettings, QueueConfig

    def config(fields):
        queue = QueueConfig.child_of("root", "a", **fields)
        return PartitionConfig(PartitionSettings("p"), (QueueConfig("root", None, "root"), queue))

    before, after = config(old), config(new)
    assert approval_gate.needs_approval("decreases", before, after) is held
    assert approval_gate.needs_approval("all", before, after) is True
    assert approval_gate.needs_approval("none", before, after) is False


def test_settings_alone_are_never_held(team):
    set_approval("all")
    result = services.update_partition_settings(
        "default", actor=None, comment="miss", miss_percent=5
    )
    assert result.revision is not None and result.change_request is None


def test_a_change_needing_no_approval_is_saved_as_before(team):
    set_approval("decreases")
    admin = user_with_role("alice", "admin")
    result = patch("root.team", admin, max={"memory": 500 * GB})
    assert result.revision is not None and result.change_request is None
    assert not ChangeRequest.objects.exists()


def test_a_held_change_writes_a_request_and_no_revision(team):
    set_approval("decreases")
    alice = user_with_role("alice", "operator")
    revisions = ConfigRevision.objects.count()
    result = patch("root.team", alice, max={"memory": 100 * GB})
    request = result.change_request
    assert result.revision is None and request is not None
    assert ConfigRevision.objects.count() == revisions
    assert Queue.objects.get(path="root.team").max == {"memory": 400 * GB}
    assert request.status == "pending" and request.author == alice
    assert request.queue_paths == ["root.team"]
    assert request.edits["queues"] == {"root.team": {"set": {"max": {"memory": 100 * GB}}}}
    assert [(c["queue"], c["field"]) for c in request.diff] == [("root.team", "max.memory")]
    assert not QuotaTimer.objects.exists()
    event = AuditEvent.objects.get(kind="change.requested")
    assert event.object_id == str(request.pk) and event.queue_path == "root.team"


def test_whole_config_put_under_all_is_held(team):
    set_approval("all")
    current = config_of(team)
    queue = current.queue("root.team.b")
    from dataclasses import replace

    changed = current.with_queue(replace(queue, properties={"preemption.policy": "fence"}))
    result = services.save_partition_config(
        changed, actor=None, comment="put", request_approval=True
    )
    assert result.change_request is not None
    assert result.change_request.queue_paths == ["root.team.b"]


# --- approving ------------------------------------------------------------------------------------


def test_the_author_cannot_approve_their_own_request(team):
    set_approval("decreases")
    alice = user_with_role("alice", "admin")
    request = patch("root.team", alice, max={"memory": 100 * GB}).change_request
    with pytest.raises(Forbidden, match="another admin"):
        change_requests.approve_request(
            "default", request.pk, actor=alice,
            authorize=request_authorizer(alice, APPROVE_CHANGE, request),
        )  # fmt: skip
    assert ChangeRequest.objects.get(pk=request.pk).status == "pending"


def test_another_admin_approves_revision_names_both_and_timer_starts(team):
    set_approval("decreases")
    alice = user_with_role("alice", "operator")
    bob = user_with_role("bob", "admin")
    request = patch("root.team", alice, max={"memory": 100 * GB}).change_request
    with time_machine.travel(START + timedelta(minutes=1), tick=False):
        decided, result = change_requests.approve_request(
            "default", request.pk, actor=bob, comment="ok",
            authorize=request_authorizer(bob, APPROVE_CHANGE, request),
        )  # fmt: skip
    revision = result.revision
    assert revision is not None
    assert (revision.author, revision.approved_by) == (alice, bob)
    assert (revision.author_name, revision.approved_by_name) == ("alice", "bob")
    assert revision.comment == "change it"
    assert decided.status == "approved" and decided.revision_number == revision.number
    assert Queue.objects.get(path="root.team").max == {"memory": 100 * GB}
    timer = QuotaTimer.objects.get(queue_path="root.team", status=TimerStatus.PENDING)
    assert timer.revision_number == revision.number
    approved = AuditEvent.objects.get(kind="change.approved")
    saved = AuditEvent.objects.filter(kind="config.changed").latest("id")
    assert saved.actor_name == "bob" and saved.data["requested_by"] == "alice"
    assert approved.data["revision"] == revision.number


def test_approval_applies_onto_the_config_of_that_moment(team):
    set_approval("decreases")
    alice = user_with_role("alice", "operator")
    bob = user_with_role("bob", "admin")
    request = patch("root.team.a", alice, guaranteed={"memory": 10 * GB}).change_request
    patch("root.team.b", bob, max={"memory": 300 * GB})  # held as well: a new max
    services.update_queue(
        "default", "root.team", version=Queue.objects.get(path="root.team").version,
        actor=bob, comment="raise", max={"memory": 500 * GB},
    )  # fmt: skip
    change_requests.approve_request("default", request.pk, actor=bob)
    config = config_of(team)
    assert config.queue("root.team").max == {"memory": 500 * GB}  # kept
    assert config.queue("root.team.a").guaranteed == {"memory": 10 * GB}


def test_approval_validates_again_and_keeps_the_request_pending_when_invalid(team):
    set_approval("decreases")
    alice = user_with_role("alice", "operator")
    bob = user_with_role("bob", "admin")
    request = patch("root.team.a", alice, max={"memory": 300 * GB}).change_request
    services.update_queue(
        "default", "root.team", version=Queue.objects.get(path="root.team").version,
        actor=bob, comment="lower parent", max={"memory": 450 * GB},
    )  # fmt: skip
    services.update_partition_settings("default", actor=None, comment="off", approval="none")
    services.update_queue(
        "default", "root.team", version=Queue.objects.get(path="root.team").version,
        actor=bob, comment="lower parent", max={"memory": 200 * GB},
    )  # fmt: skip
    with pytest.raises(ConfigErrors):
        change_requests.approve_request("default", request.pk, actor=bob, confirm_stale=True)
    assert ChangeRequest.objects.get(pk=request.pk).status == "pending"


def test_a_stale_request_is_flagged_and_needs_confirmation(team):
    set_approval("decreases")
    alice = user_with_role("alice", "operator")
    bob = user_with_role("bob", "admin")
    request = patch("root.team", alice, max={"memory": 100 * GB}).change_request
    assert change_requests.stale_queues(request) == []
    patch("root.team.b", bob, max={"memory": 300 * GB})  # held: nothing saved, not stale
    assert change_requests.stale_queues(request) == []
    patch("root.team", bob, properties={"quota.preemption.delay": "5s"})  # saved: touches it
    request.refresh_from_db()
    assert change_requests.stale_queues(request) == ["root.team"]
    with pytest.raises(change_requests.RequestStale, match=r"root\.team"):
        change_requests.approve_request("default", request.pk, actor=bob)
    change_requests.approve_request("default", request.pk, actor=bob, confirm_stale=True)
    assert ChangeRequest.objects.get(pk=request.pk).status == "approved"


# --- rejecting and withdrawing ----------------------------------------------------------------


def test_reject_needs_a_comment_and_another_admin(team):
    set_approval("decreases")
    alice = user_with_role("alice", "admin")
    bob = user_with_role("bob", "admin")
    request = patch("root.team", alice, max={"memory": 100 * GB}).change_request
    with pytest.raises(Invalid) as refused:
        change_requests.reject_request("default", request.pk, actor=bob, comment="  ")
    assert "comment" in refused.value.errors
    with pytest.raises(Forbidden):
        change_requests.reject_request("default", request.pk, actor=alice, comment="no")
    rejected = change_requests.reject_request("default", request.pk, actor=bob, comment="too low")
    assert (rejected.status, rejected.decision_comment, rejected.decided_by) == (
        "rejected", "too low", bob,
    )  # fmt: skip
    assert Queue.objects.get(path="root.team").max == {"memory": 400 * GB}
    with pytest.raises(change_requests.RequestDecided):
        change_requests.approve_request("default", request.pk, actor=bob)
    assert AuditEvent.objects.filter(kind="change.rejected").count() == 1


def test_only_the_author_withdraws(team):
    set_approval("all")
    alice = user_with_role("alice", "operator")
    bob = user_with_role("bob", "admin")
    request = patch("root.team", alice, max={"memory": 500 * GB}).change_request
    with pytest.raises(Forbidden, match="alice"):
        change_requests.withdraw_request("default", request.pk, actor=bob)
    withdrawn = change_requests.withdraw_request("default", request.pk, actor=alice)
    assert withdrawn.status == "withdrawn"
    assert AuditEvent.objects.filter(kind="change.withdrawn").count() == 1


# --- tenant admins ------------------------------------------------------------------------------


def test_a_tenant_admin_decides_only_inside_their_subtree(team):
    from scheduler_admin.accounts.grants import give_grant

    set_approval("decreases")
    alice = user_with_role("alice", "operator")
    tenant = user_with_role("tenant")
    give_grant(
        partition="default", queue_path="root.team.a", user="tenant", role="admin", actor=None
    )
    inside = patch("root.team.a", alice, guaranteed={"memory": 10 * GB}).change_request
    outside = patch("root.team", alice, max={"memory": 100 * GB}).change_request
    with pytest.raises(Forbidden):
        change_requests.approve_request(
            "default", outside.pk, actor=tenant,
            authorize=request_authorizer(tenant, APPROVE_CHANGE, outside),
        )  # fmt: skip
    change_requests.approve_request(
        "default", inside.pk, actor=tenant,
        authorize=request_authorizer(tenant, APPROVE_CHANGE, inside),
    )  # fmt: skip
    assert ChangeRequest.objects.get(pk=inside.pk).status == "approved"


def test_requesting_needs_the_right_to_edit(team):
    set_approval("decreases")
    viewer = user_with_role("vic", "viewer")
    with pytest.raises(Forbidden):
        services.update_queue(
            "default", "root.team", version=1, actor=viewer, comment="x",
            max={"memory": 1 * GB}, request_approval=True,
            authorize=authorizer(viewer, EDIT_QUEUE, "root.team"),
        )  # fmt: skip
    assert not ChangeRequest.objects.exists()
