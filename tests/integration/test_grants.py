"""Queue grants (issue 16, tenant admins): the services that give and revoke them, what
``permissions.can`` decides from them, and what a holder of grants only gets to see."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from scheduler_admin.accounts import permissions
from scheduler_admin.accounts.grants import (
    GrantError,
    GrantNotFound,
    give_grant,
    revoke_grant,
    set_groups,
    tenant_groups,
)
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.accounts.permissions import (
    ABORT_RUN,
    ADMINISTER,
    CANCEL_TIMER,
    CREATE_QUEUE,
    DELETE_QUEUE,
    EDIT_QUEUE,
    OPERATE_CLUSTER,
    PREVIEW,
    READ,
    SIMULATE,
    can,
)
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.audit.services import record_event
from scheduler_admin.enforcement import visibility
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunVictim
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from tests.support.tenants import INSIDE, tenant_state, tenant_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants():
    return tenant_state()


def _user(name: str):
    return get_user_model().objects.create_user(name, password="pw-12345678")


def fresh(user):
    """The user as a new request would load it (``can`` keeps what it read on the object)."""
    return get_user_model().objects.get(pk=user.pk)


# ---- giving and revoking ------------------------------------------------------------------
def test_a_grant_is_given_once_audited_and_its_role_can_change(tenants):
    ann = _user("ann")
    given = give_grant(partition="default", queue_path=INSIDE, role="operator", user="ann",
                       actor=None)  # fmt: skip
    assert given.created and given.grant.queue.path == INSIDE and given.grant.user == ann
    again = give_grant(partition="default", queue_path=INSIDE, role="operator", user="ann",
                       actor=None)  # fmt: skip
    assert not again.created and not again.changed and again.grant.pk == given.grant.pk
    changed = give_grant(partition="default", queue_path=INSIDE, role="admin", user="ann",
                         actor=None)  # fmt: skip
    assert changed.changed and changed.grant.pk == given.grant.pk
    assert QueueGrant.objects.get().role == "admin"
    events = AuditEvent.objects.filter(object_type="grant").order_by("id")
    assert [e.kind for e in events] == ["grant.created", "grant.changed"]
    assert {e.queue_path for e in events} == {INSIDE} and events[1].data["from"] == "operator"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"role": "viewer", "user": "ann"}, "role"),
        ({"role": "operator"}, "user"),
        ({"role": "operator", "user": "ann", "group": "g"}, "group"),
        ({"role": "operator", "user": "nobody"}, "user"),
        ({"role": "operator", "group": "no-such-group"}, "group"),
        ({"role": "operator", "group": "operator"}, "group"),
        ({"role": "operator", "user": "ann", "partition": "other"}, "partition"),
        ({"role": "operator", "user": "ann", "queue_path": "root.team-c"}, "queue"),
        ({"role": "operator", "user": "ann", "queue_path": "root.\x00"}, "queue"),
    ],
)
def test_a_refused_grant_names_the_field_and_writes_nothing(tenants, fields, field):
    _user("ann")
    arguments = {"partition": "default", "queue_path": INSIDE, **fields}
    events = AuditEvent.objects.count()
    with pytest.raises(GrantError) as refused:
        give_grant(actor=None, **arguments)
    assert refused.value.field == field
    assert not QueueGrant.objects.exists() and AuditEvent.objects.count() == events


def test_revoking_takes_the_rights_away_and_is_audited(tenants):
    ann = _user("ann")
    grant = give_grant(partition="default", queue_path=INSIDE, role="operator", user="ann",
                       actor=None).grant  # fmt: skip
    assert can(fresh(ann), EDIT_QUEUE, "default", "root.team-a.web")
    revoke_grant(grant.pk, actor=None)
    assert not can(fresh(ann), EDIT_QUEUE, "default", "root.team-a.web")
    event = AuditEvent.objects.get(kind="grant.revoked")
    assert event.queue_path == INSIDE and event.data["user"] == "ann"
    with pytest.raises(GrantNotFound):
        revoke_grant(grant.pk, actor=None)


def test_a_grant_goes_with_its_queue_and_a_new_queue_of_that_path_starts_without(tenants):
    _user("ann")
    give_grant(partition="default", queue_path="root.team-a.web", role="admin", user="ann",
               actor=None)  # fmt: skip
    web = Queue.objects.get(path="root.team-a.web")
    services.delete_queue("default", "root.team-a.web", version=web.version, actor=None,
                          comment="gone")  # fmt: skip
    assert not QueueGrant.objects.exists()
    services.create_queue("default", parent=INSIDE, name="web", actor=None, comment="back")
    assert not QueueGrant.objects.exists()
    assert not can(fresh(get_user_model().objects.get(username="ann")), READ, "default",
                   "root.team-a.web")  # fmt: skip


def test_a_config_replacement_that_leaves_the_queue_out_deletes_its_grants(tenants):
    _user("ann")
    give_grant(partition="default", queue_path="root.team-b", role="operator", user="ann",
               actor=None)  # fmt: skip
    config = tenants.partition.current_config().without_subtree("root.team-b")
    services.save_partition_config(config, actor=None, comment="team-b leaves")
    assert not QueueGrant.objects.exists()


def test_deleting_a_subtree_is_audited_on_that_subtree(tenants):
    """A holder of grants only sees the events of their queues: a subtree's deletion names the
    deleted queue, so its admin sees their own deletion."""
    web = Queue.objects.get(path="root.team-a.web")
    services.create_queue("default", parent="root.team-a.web", name="x", actor=None,
                          comment="child")  # fmt: skip
    web.refresh_from_db()
    services.delete_queue("default", "root.team-a.web", version=web.version, actor=None,
                          comment="drop web")  # fmt: skip
    event = AuditEvent.objects.filter(kind="config.changed").latest("id")
    assert sorted(event.data["changed_queues"]) == ["root.team-a.web", "root.team-a.web.x"]
    assert event.queue_path == "root.team-a.web"


def test_groups_are_set_created_and_audited_and_role_groups_refused(tenants):
    ann = _user("ann")
    ann.groups.add(Group.objects.get(name="viewer"))
    assert set_groups(ann, ["team-a", " team-b ", "team-a"], actor=None)
    assert tenant_groups(fresh(ann)) == ["team-a", "team-b"]
    assert "viewer" in {g.name for g in fresh(ann).groups.all()}  # the role stays
    assert not set_groups(ann, ["team-b", "team-a"], actor=None)
    assert AuditEvent.objects.filter(kind="user.groups_changed").count() == 1
    with pytest.raises(GrantError):
        set_groups(ann, ["admin"], actor=None)
    assert tenant_groups(fresh(ann)) == ["team-a", "team-b"]


# ---- what can decides --------------------------------------------------------------------
QUEUE_ACTIONS = {
    READ: ("operator", "admin"),
    SIMULATE: ("operator", "admin"),
    PREVIEW: ("operator", "admin"),
    EDIT_QUEUE: ("operator", "admin"),
    CANCEL_TIMER: ("operator", "admin"),
    CREATE_QUEUE: ("admin",),
    ABORT_RUN: ("admin",),
}


@pytest.mark.parametrize("action", sorted(QUEUE_ACTIONS))
@pytest.mark.parametrize("role", ["operator", "admin"])
def test_a_grant_covers_its_queue_and_below_and_nothing_else(tenants, action, role):
    ann = _user("ann")
    give_grant(partition="default", queue_path=INSIDE, role=role, user="ann", actor=None)
    allowed = role in QUEUE_ACTIONS[action]
    for path in (INSIDE, "root.team-a.web", "root.team-a.web.deeper"):
        assert bool(can(ann, action, "default", path)) is allowed, path
    for path in ("root.team-b", "root.team-b.web", "root", "root.team-ab", "root.team"):
        decision = can(ann, action, "default", path)
        assert not decision, path
    # The partition as a whole, another partition: never through a grant.
    assert not can(ann, action, "default")
    assert not can(ann, action, "other", INSIDE)


def test_deleting_needs_an_admin_grant_above_the_queue(tenants):
    ann = _user("ann")
    give_grant(partition="default", queue_path=INSIDE, role="admin", user="ann", actor=None)
    assert can(ann, DELETE_QUEUE, "default", "root.team-a.web")
    refused = can(ann, DELETE_QUEUE, "default", INSIDE)
    assert not refused and "queue you were granted" in refused.reason


def test_cluster_and_whole_partition_actions_are_never_granted(tenants):
    ann = _user("ann")
    give_grant(partition="default", queue_path="root", role="admin", user="ann", actor=None)
    for action in (OPERATE_CLUSTER, ADMINISTER):
        assert not can(ann, action, "default")
        assert not can(ann, action, "default", "root.team-a")
    assert can(ann, EDIT_QUEUE, "default", "root")  # a grant on root covers every queue
    assert not can(ann, READ, "default")  # ... but not the partition as a whole


def test_the_reason_names_the_holders_own_subtrees_and_what_they_asked(tenants):
    ann = _user("ann")
    give_grant(partition="default", queue_path=INSIDE, role="admin", user="ann", actor=None)
    decision = can(ann, EDIT_QUEUE, "default", "root.team-b.web")
    assert decision.reason == "You administer root.team-a only: root.team-b.web is outside."
    operator = _user("olga")
    give_grant(partition="default", queue_path=INSIDE, role="operator", user="olga",
               actor=None)  # fmt: skip
    decision = can(operator, CREATE_QUEUE, "default", INSIDE)
    assert "needs the admin role" in decision.reason and "root.team-a" in decision.reason


def test_global_roles_decide_as_before_and_add_to_grants(tenants):
    viewer = tenant_user("viewer")
    operator = tenant_user("operator")
    admin = tenant_user("admin")
    for path in (None, "root.team-b.web"):
        assert can(viewer, READ, "default", path) and can(viewer, SIMULATE, "default", path)
        assert not can(viewer, EDIT_QUEUE, "default", path or "root")
        assert can(operator, EDIT_QUEUE, "default", path or "root")
        assert can(operator, OPERATE_CLUSTER, "default")
        assert not can(operator, DELETE_QUEUE, "default", path or "root.team-a")
        assert can(admin, ADMINISTER) and can(admin, DELETE_QUEUE, "default", "root.team-a")
    assert can(viewer, EDIT_QUEUE).reason == "This action needs the operator role."
    give_grant(partition="default", queue_path=INSIDE, role="operator", user=viewer.username,
               actor=None)  # fmt: skip
    viewer = fresh(viewer)
    assert can(viewer, EDIT_QUEUE, "default", "root.team-a.web")
    assert not can(viewer, EDIT_QUEUE, "default", "root.team-b.web")
    assert can(viewer, READ, "default")  # still reads everything as a viewer
    assert permissions.read_scope(viewer) is None


def test_a_group_grant_holds_for_its_members_only_while_they_are_members(tenants):
    bob = _user("bob")
    set_groups(bob, ["tenant-a"], actor=None)
    give_grant(partition="default", queue_path=INSIDE, role="operator", group="tenant-a",
               actor=None)  # fmt: skip
    assert can(fresh(bob), EDIT_QUEUE, "default", "root.team-a.batch")
    set_groups(bob, [], actor=None)
    assert not can(fresh(bob), EDIT_QUEUE, "default", "root.team-a.batch")


def test_anonymous_and_deactivated_users_may_do_nothing(tenants):
    from django.contrib.auth.models import AnonymousUser

    assert can(AnonymousUser(), READ).reason == "Sign in first."
    admin = tenant_user("admin")
    admin.is_active = False
    admin.save()
    assert not permissions.can(admin, EDIT_QUEUE, "default", INSIDE, fresh=True)


# ---- what a holder of grants only sees ---------------------------------------------------
def test_lists_are_narrowed_to_the_holders_subtrees(tenants):
    holder = tenant_user("sub_operator")
    scope = permissions.read_scope(holder)
    assert scope is not None and scope.roots == {"default": (INSIDE,)}
    timers = permissions.visible_rows(holder, QuotaTimer.objects.filter(status="pending"))
    assert [t.queue_path for t in timers] == ["root.team-a.web"]
    partitions = permissions.visible_partitions(holder, Partition.objects.all())
    assert [p.name for p in partitions] == ["default"]
    assert permissions.read_scope(tenant_user("viewer")) is None


def _run(queue: str, victims: list[str], policy: str = "quota") -> PreemptionRun:
    """A finished run of ``queue`` whose victims are in ``victims`` (rows as a run keeps)."""
    run = PreemptionRun.objects.create(
        partition=Partition.objects.get(name="default"), policy=policy, queue_path=queue,
        trigger="ask", status="finished", created_at=timezone.now() - timedelta(minutes=1),
    )  # fmt: skip
    for position, path in enumerate(victims, start=1):
        RunVictim.objects.create(run=run, position=position, allocation_id=f"v{run.pk}-{position}",
                                 queue_path=path, node_name="n1")  # fmt: skip
    return run


def test_a_run_that_took_a_task_of_another_tenant_is_not_shown_to_a_subtree_holder(tenants):
    holder = tenant_user("sub_admin")
    own = _run("root.team-a.web", ["root.team-a.batch"], policy="inter_queue")
    across = _run("root.team-a.web", ["root.team-a.batch", "root.team-b.web"], "inter_queue")
    theirs = _run("root.team-b.web", ["root.team-b.web"])
    seen = set(visibility.visible_runs(holder, PreemptionRun.objects.all()).values_list(
        "pk", flat=True))  # fmt: skip
    assert own.pk in seen and tenants.run_in.pk in seen
    assert across.pk not in seen and theirs.pk not in seen and tenants.run_out.pk not in seen
    everything = visibility.visible_runs(tenant_user("viewer"), PreemptionRun.objects.all())
    assert everything.count() == PreemptionRun.objects.count()


def test_the_audit_log_of_a_subtree_holder_holds_their_queues_and_readable_runs(tenants):
    holder = tenant_user("sub_operator")
    across = _run("root.team-a.web", ["root.team-b.web"], policy="inter_queue")
    record_event(
        "run.planned", actor=None, summary="plan naming bw1", partition_name="default",
        queue_path="root.team-a.web", object_type="run", object_id=str(across.pk),
    )  # fmt: skip
    seen = visibility.visible_audit(holder, AuditEvent.objects.all())
    assert seen.exists()
    for event in seen:
        assert event.partition_name == "default"
        assert event.queue_path == INSIDE or event.queue_path.startswith(INSIDE + ".")
    assert not seen.filter(object_type="run", object_id=str(across.pk)).exists()
    assert not seen.filter(queue_path__startswith="root.team-b").exists()
    assert not seen.filter(object_type="user").exists()  # accounts are for global roles
