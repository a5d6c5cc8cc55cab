"""The config service against PostgreSQL: revisions, audit events, versions, revert, atomicity."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from preemption.config import PartitionConfig, QueueConfig, diff_configs
from preemption.hierarchy import ConfigErrors
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue, RevisionKind
from scheduler_admin.queues.yaml_io import parse_queues_yaml

pytestmark = pytest.mark.django_db

GI = 1024**3

BASE_YAML = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: tenant
            resources:
              guaranteed: {memory: 40Gi, vcore: 10}
              max: {memory: 100Gi, vcore: 40}
            queues:
              - name: a
                resources:
                  guaranteed: {memory: 20Gi}
                  max: {memory: 60Gi}
              - name: b
                resources:
                  max: {memory: 50Gi}
"""


@pytest.fixture
def admin_account():
    return get_user_model().objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def saved(admin_account) -> services.SaveResult:
    [config] = parse_queues_yaml(BASE_YAML, settings_for=services.settings_for_import)
    return services.save_partition_config(config, actor=admin_account, comment="initial load")


def database_state() -> tuple:
    """Everything a refused change must leave untouched."""
    return (
        list(Partition.objects.values_list("name", "version", "miss_percent")),
        list(Queue.objects.order_by("path").values_list("path", "max", "guaranteed", "version")),
        ConfigRevision.objects.count(),
        AuditEvent.objects.count(),
    )


def test_first_save_creates_partition_revision_one_and_audit_event(saved, admin_account):
    assert saved.revision is not None and saved.revision.number == 1
    assert saved.revision.author_name == "alice"
    assert saved.revision.comment == "initial load"
    assert [q.path for q in saved.partition.current_config().queues] == [
        "root",
        "root.tenant",
        "root.tenant.a",
        "root.tenant.b",
    ]
    event = AuditEvent.objects.get()
    assert event.kind == AuditKind.CONFIG_CHANGED
    assert event.actor == admin_account and event.actor_name == "alice"
    assert event.data["revision"] == 1 and event.data["created_partition"] is True


def test_every_queue_change_writes_a_revision_and_an_audit_event(saved, admin_account):
    queue = Queue.objects.get(path="root.tenant.a")
    result = services.update_queue(
        "default",
        "root.tenant.a",
        version=queue.version,
        actor=admin_account,
        comment="shrink a",
        max={"memory": 30 * GI},
    )
    assert result.revision.number == 2
    assert result.revision.snapshot["queues"][2]["max"] == {"memory": 30 * GI}
    queue.refresh_from_db()
    assert queue.max == {"memory": 30 * GI} and queue.version == 2
    assert Queue.objects.get(path="root.tenant.b").version == 1  # untouched queues keep theirs
    event = AuditEvent.objects.order_by("-id").first()
    assert event.kind == AuditKind.CONFIG_CHANGED
    assert event.queue_path == "root.tenant.a"
    assert event.data["changes"] == [
        {"queue": "root.tenant.a", "field": "max.memory", "old": "60Gi", "new": "30Gi"}
    ]


def test_a_stale_queue_version_is_refused_and_changes_nothing(saved, admin_account):
    services.update_queue(
        "default", "root.tenant.a", version=1, actor=admin_account, comment="first",
        max={"memory": 50 * GI},
    )  # fmt: skip
    before = database_state()
    with pytest.raises(services.StaleVersion) as refused:
        services.update_queue(
            "default", "root.tenant.a", version=1, actor=admin_account, comment="second",
            max={"memory": 10 * GI},
        )  # fmt: skip
    assert refused.value.current == 2
    assert database_state() == before


def test_a_stale_partition_revision_is_refused(saved, admin_account):
    config = saved.partition.current_config()
    changed = replace(config, settings=replace(config.settings, miss_percent=5))
    services.save_partition_config(changed, actor=admin_account, comment="x", expected_revision=1)
    before = database_state()
    with pytest.raises(services.StaleVersion):
        services.save_partition_config(
            replace(config, settings=replace(config.settings, miss_percent=9)),
            actor=admin_account,
            comment="y",
            expected_revision=1,
        )
    assert database_state() == before


def test_an_invalid_change_lists_every_broken_rule_and_changes_nothing(saved, admin_account):
    config = saved.partition.current_config()
    a = config.queue("root.tenant.a")
    b = config.queue("root.tenant.b")
    broken = config.with_queue(
        replace(a, guaranteed={"memory": 70 * GI}, properties={"preemption.policy": "nope"})
    ).with_queue(replace(b, max={"memory": 500 * GI}))
    before = database_state()
    with pytest.raises(ConfigErrors) as refused:
        services.save_partition_config(broken, actor=admin_account, comment="bad")
    locations = {error.location for error in refused.value.errors}
    assert {
        "queues[root.tenant.a].max.memory",  # below its own guarantee
        "queues[root.tenant.a].properties.preemption.policy",
        "queues[root.tenant.b].max.memory",  # above the parent's max
        "queues[root.tenant].guaranteed.memory",  # children's guarantees above the parent's
    } <= locations
    assert database_state() == before


def test_a_comment_is_required(saved, admin_account):
    before = database_state()
    with pytest.raises(ConfigErrors) as refused:
        services.update_queue(
            "default", "root.tenant.a", version=1, actor=admin_account, comment="  ",
            max={"memory": 10 * GI},
        )  # fmt: skip
    assert refused.value.errors[0].location == "comment"
    assert database_state() == before


def test_saving_an_identical_config_writes_nothing(saved, admin_account):
    before = database_state()
    result = services.save_partition_config(
        saved.partition.current_config(), actor=admin_account, comment="same again"
    )
    assert result.revision is None
    assert database_state() == before


def test_adding_and_removing_queues(saved, admin_account):
    config = saved.partition.current_config()
    grown = config.with_queue(QueueConfig.child_of("root.tenant.b", "deep", max={"vcore": 1000}))
    services.save_partition_config(grown, actor=admin_account, comment="add deep")
    assert Queue.objects.get(path="root.tenant.b.deep").parent.path == "root.tenant.b"
    shrunk = grown.without_subtree("root.tenant.b")
    result = services.save_partition_config(shrunk, actor=admin_account, comment="drop b")
    assert not Queue.objects.filter(path__startswith="root.tenant.b").exists()
    assert set(result.revision.config().queues_by_path()) == {
        "root",
        "root.tenant",
        "root.tenant.a",
    }


def test_revert_creates_a_new_revision_equal_to_the_old_one(saved, admin_account):
    services.update_queue(
        "default", "root.tenant.a", version=1, actor=admin_account, comment="shrink",
        max={"memory": 25 * GI},
    )  # fmt: skip
    result = services.revert_config(
        "default", to_number=1, actor=admin_account, expected_revision=2
    )
    assert result.revision.number == 3
    assert result.revision.kind == RevisionKind.REVERT
    assert result.revision.reverted_from == 1
    assert result.revision.comment == "Revert to revision 1"
    first = ConfigRevision.objects.get(number=1)
    assert result.revision.snapshot == first.snapshot
    assert Partition.objects.get().current_config() == first.config()
    event = AuditEvent.objects.order_by("-id").first()
    assert event.kind == AuditKind.CONFIG_REVERTED and event.object_id == "3"
    # the reverted queue's version moved on, so editors holding version 2 are refused
    assert Queue.objects.get(path="root.tenant.a").version == 3


def test_revert_to_a_missing_revision_is_not_found(saved, admin_account):
    with pytest.raises(services.NotFound):
        services.revert_config("default", to_number=7, actor=admin_account, expected_revision=1)


def test_revert_validates_the_old_snapshot_again(saved, admin_account):
    # A snapshot that would not pass today's rules (written directly, as an older release might
    # have) is refused on revert like any other change.
    bad = saved.partition.current_config()
    a = bad.queue("root.tenant.a")
    bad = bad.with_queue(replace(a, max={"memory": 999 * GI}))
    ConfigRevision.objects.create(
        partition=saved.partition, number=2, kind=RevisionKind.CHANGE,
        created_at=saved.revision.created_at, author_name="legacy", comment="legacy",
        snapshot=bad.to_json(),
    )  # fmt: skip
    before = database_state()
    with pytest.raises(ConfigErrors):
        services.revert_config("default", to_number=2, actor=admin_account, expected_revision=1)
    assert database_state() == before


def test_diff_between_any_two_revisions_is_computed_from_snapshots(saved, admin_account):
    services.update_queue(
        "default", "root.tenant.b", version=1, actor=admin_account, comment="b",
        max={"memory": 40 * GI, "vcore": 8000},
    )  # fmt: skip
    first, second = (r.config() for r in ConfigRevision.objects.order_by("number"))
    changes = [(c.queue, c.field, c.old, c.new) for c in diff_configs(first, second)]
    assert changes == [
        ("root.tenant.b", "max.memory", 50 * GI, 40 * GI),
        ("root.tenant.b", "max.vcore", None, 8000),
    ]


def test_system_actor_is_recorded_when_nobody_is_signed_in(saved):
    result = services.update_queue(
        "default", "root.tenant.b", version=1, actor=None, comment="automation",
        max={"memory": 45 * GI},
    )  # fmt: skip
    assert result.revision.author is None and result.revision.author_name == "system"
    assert AuditEvent.objects.order_by("-id").first().actor_name == "system"


@pytest.mark.django_db(transaction=True)
def test_concurrent_edits_of_one_version_let_exactly_one_through():
    """Two editors read version 1 and save at the same moment: the partition row lock serialises
    them, so the second sees version 2 and is refused instead of overwriting."""
    [config] = parse_queues_yaml(BASE_YAML, settings_for=services.settings_for_import)
    services.save_partition_config(config, actor=None, comment="initial")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def edit(memory_gi: int) -> None:
        barrier.wait()
        try:
            services.update_queue(
                "default", "root.tenant.a", version=1, actor=None, comment=f"{memory_gi}",
                max={"memory": memory_gi * GI},
            )  # fmt: skip
            outcomes.append("saved")
        except services.StaleVersion:
            outcomes.append("stale")
        finally:
            connection.close()

    threads = [threading.Thread(target=edit, args=(size,)) for size in (30, 35)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["saved", "stale"]
    assert ConfigRevision.objects.count() == 2
    assert Queue.objects.get(path="root.tenant.a").version == 2


def test_partition_config_snapshot_round_trips(saved):
    snapshot = saved.revision.snapshot
    assert PartitionConfig.from_json(snapshot).to_json() == snapshot


def test_reordering_siblings_is_a_change_that_export_preserves(saved, admin_account):
    config = saved.partition.current_config()
    a, b = config.queue("root.tenant.a"), config.queue("root.tenant.b")
    swapped = replace(
        config,
        queues=tuple(
            b if q.path == a.path else a if q.path == b.path else q for q in config.queues
        ),
    )
    result = services.save_partition_config(swapped, actor=admin_account, comment="b first")
    assert result.revision is not None
    assert Partition.objects.get().current_config().sibling_order()["root.tenant"] == [
        "root.tenant.b",
        "root.tenant.a",
    ]


def test_an_edit_applies_to_the_config_saved_when_it_is_written(saved, admin_account):
    """The edit function runs under the lock on what is saved then: a change of another queue
    saved after the caller read the config is kept, not reverted by the caller's copy."""
    stale = Partition.objects.get(name="default").current_config()
    services.update_queue(
        "default", "root.tenant.b", version=1, actor=admin_account, comment="b",
        max={"memory": 45 * GI},
    )  # fmt: skip
    services.update_queue(
        "default", "root.tenant.a", version=1, actor=admin_account, comment="a",
        max={"memory": 55 * GI},
    )  # fmt: skip
    saved_now = Partition.objects.get(name="default").current_config()
    assert saved_now.queue("root.tenant.b").max == {"memory": 45 * GI}
    assert saved_now.queue("root.tenant.a").max == {"memory": 55 * GI}
    assert stale.queue("root.tenant.b").max == {"memory": 50 * GI}  # what a stale copy held


def test_an_import_keeps_the_product_settings_saved_when_it_is_written(saved, admin_account):
    """queues.yaml carries no miss_percent, delays or ask policy: the values kept are those
    saved at the moment of the import, not those read when the file was parsed."""
    [parsed] = parse_queues_yaml(
        BASE_YAML.replace("max: {memory: 50Gi}", "max: {memory: 40Gi}"),
        settings_for=services.settings_for_import,
    )
    assert parsed.settings.miss_percent == 0
    services.update_partition_settings(
        "default", actor=admin_account, comment="tolerance", miss_percent=7, ask_policy="priority"
    )
    services.import_partition_configs([parsed], actor=admin_account, comment="import")
    partition = Partition.objects.get(name="default")
    assert (partition.miss_percent, partition.ask_policy) == (7, "priority")
    assert Queue.objects.get(path="root.tenant.b").max == {"memory": 40 * GI}


def test_an_import_previewed_against_an_older_version_saves_nothing(saved, admin_account):
    [parsed] = parse_queues_yaml(BASE_YAML, settings_for=services.settings_for_import)
    previewed = {"default": Partition.objects.get(name="default").version}
    services.update_partition_settings(
        "default", actor=admin_account, comment="meanwhile", miss_percent=3
    )
    before = database_state()
    with pytest.raises(services.StaleVersion):
        services.import_partition_configs(
            [parsed], actor=admin_account, comment="import", expected_revisions=previewed
        )
    assert database_state() == before


def test_queue_create_and_delete_check_the_tree_as_saved_when_written(saved, admin_account):
    result, path = services.create_queue(
        "default", parent="root.tenant", name="c", actor=admin_account, comment="add c",
        max={"memory": 10 * GI},
    )  # fmt: skip
    assert path == "root.tenant.c" and result.changed
    with pytest.raises(ConfigErrors) as again:
        services.create_queue(
            "default", parent="root.tenant", name="c", actor=admin_account, comment="again"
        )
    assert [e.location for e in again.value.errors] == ["name"]
    with pytest.raises(ConfigErrors) as orphan:
        services.create_queue(
            "default", parent="root.gone", name="x", actor=admin_account, comment="orphan"
        )
    assert [e.location for e in orphan.value.errors] == ["parent"]
    with pytest.raises(ConfigErrors):
        services.delete_queue("default", "root", version=1, actor=admin_account, comment="no")
    services.delete_queue("default", path, version=1, actor=admin_account, comment="drop c")
    assert not Queue.objects.filter(path=path).exists()
    with pytest.raises(services.NotFound):
        services.delete_queue("default", path, version=1, actor=admin_account, comment="twice")
