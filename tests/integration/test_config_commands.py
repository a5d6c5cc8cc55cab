"""import_config / export_config / revert_config as an admin runs them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue

pytestmark = pytest.mark.django_db

#: Realistic: 4 levels, a fence, delays in both spellings, several resource types, kept keys.
REALISTIC = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    limits:
      - limit: per user
        users: ["*"]
        maxapplications: 10
    nodesortpolicy: {type: binpacking}
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: prod
            resources:
              guaranteed: {memory: 400Gi, vcore: "100"}
              max: {memory: 800Gi, vcore: "200", pods: "1k"}
            properties: {preemption.policy: fence, quota.preemption.delay: 5m}
            queues:
              - name: web
                resources:
                  guaranteed: {memory: 200Gi, vcore: 50500m}
                  max: {memory: 400Gi, vcore: "100"}
                properties: {preemption.delay: 30s}
                queues:
                  - name: frontend@eu
                    resources: {max: {memory: 100G}}
                  - name: "static/assets"
                    adminacl: "ops"
                    resources: {max: {memory: 50G}}
              - name: api
                maxapplications: 20
                resources:
                  guaranteed: {memory: 150Gi}
                  max: {memory: 300Gi}
          - name: research
            resources:
              guaranteed: {nvidia.com/gpu: 8, memory: 100Gi}
              max: {nvidia.com/gpu: 32, memory: 1Ti}
              quota.preemption.delay: 7200
            childtemplate:
              maxapplications: 5
              properties: {application.sort.policy: fifo}
            queues:
              - name: vision
                resources: {max: {nvidia.com/gpu: 16}}
  - name: gpu-farm
    queues:
      - name: train
        resources: {max: {nvidia.com/gpu: 64}}
"""


def write(tmp_path: Path, text: str, name: str = "queues.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def snapshots() -> dict[str, dict]:
    return {
        p.name: p.revisions.order_by("-number").first().snapshot for p in Partition.objects.all()
    }


def database_state() -> tuple:
    return (
        sorted(Partition.objects.values_list("name", "version")),
        sorted(Queue.objects.values_list("partition__name", "path", "version")),
        ConfigRevision.objects.count(),
        AuditEvent.objects.count(),
    )


def test_import_export_import_round_trip_yields_identical_snapshots(tmp_path):
    output = run("import_config", write(tmp_path, REALISTIC), "--comment", "initial")
    assert "default: saved as revision 1" in output and "gpu-farm: saved as revision 1" in output
    first = snapshots()
    research = next(q for q in first["default"]["queues"] if q["path"] == "root.research")
    # The seed spelling is folded in, and seconds get their unit (Go reads "7200" as an error).
    assert research["properties"]["quota.preemption.delay"] == "7200s"

    exported = tmp_path / "exported.yaml"
    run("export_config", "--output", str(exported))
    text = exported.read_text()
    assert "quota.preemption.delay: 7200s" in text

    # Importing the export over itself changes nothing...
    assert "unchanged" in run("import_config", str(exported))
    assert ConfigRevision.objects.count() == 2
    # ...and exporting again gives the same bytes.
    again = tmp_path / "again.yaml"
    run("export_config", "--output", str(again))
    assert again.read_text() == text
    # ...and into an empty database it rebuilds exactly the same snapshots.
    Partition.objects.all().delete()
    run("import_config", str(exported))
    assert snapshots() == first


def test_export_to_stdout_is_yunikorn_yaml_without_our_own_settings(tmp_path):
    run("import_config", write(tmp_path, REALISTIC))
    text = run("export_config", "--partition", "default")
    # Quota preemption needs YuniKorn 1.8: a leading comment says so (YuniKorn ignores it).
    assert text.startswith("# Needs YuniKorn 1.8.0 or later:\n")
    assert "\npartitions:\n- name: default\n" in text
    assert "miss_percent" not in text and "ask_policy" not in text
    assert "quotapreemptionenabled: true" in text and "enabled: true" not in text.replace(
        "quotapreemptionenabled: true", ""
    )


def test_dry_run_saves_nothing_and_lists_the_changes(tmp_path):
    run("import_config", write(tmp_path, REALISTIC))
    before = database_state()
    changed = REALISTIC.replace("max: {memory: 300Gi}", "max: {memory: 250Gi}")
    output = run("import_config", write(tmp_path, changed, "changed.yaml"), "--dry-run")
    assert "root.prod.api max.memory" in output and "Dry run" in output
    assert database_state() == before


def test_import_keeps_the_products_own_partition_settings(tmp_path):
    run("import_config", write(tmp_path, REALISTIC))
    Partition.objects.filter(name="default").update(miss_percent=7, ask_policy="priority")
    changed = REALISTIC.replace("max: {memory: 300Gi}", "max: {memory: 250Gi}")
    run("import_config", write(tmp_path, changed, "changed.yaml"))
    partition = Partition.objects.get(name="default")
    assert (partition.miss_percent, partition.ask_policy) == (7, "priority")


def test_partition_option_imports_only_that_partition(tmp_path):
    run("import_config", write(tmp_path, REALISTIC), "--partition", "gpu-farm")
    assert list(Partition.objects.values_list("name", flat=True)) == ["gpu-farm"]
    with pytest.raises(CommandError, match="--partition"):
        run("import_config", write(tmp_path, REALISTIC), "--partition", "nope")


def test_skip_existing_leaves_a_loaded_partition_alone(tmp_path):
    path = write(tmp_path, REALISTIC)
    run("import_config", path)
    before = database_state()
    output = run("import_config", path, "--skip-existing")
    assert "default: exists, left as it is" in output
    assert database_state() == before


ALIAS_BOMB = """
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
partitions: [*c]
"""

BAD_INPUTS = {
    "unknown queue key": (
        REALISTIC.replace("maxapplications: 20", "maxapps: 20"),
        "partition default: root.prod.api: maxapps: unknown key",
    ),
    "unknown top-level key": ("partitons: []\n", "partitons: unknown key"),
    "alias bomb": (ALIAS_BOMB, "YAML aliases are not accepted"),
    "duplicate mapping key": (
        "partitions:\n  - name: a\n    name: b\n",
        "duplicate key 'name'",
    ),
    "wrong type for queues": (
        "partitions:\n  - name: default\n    queues: {name: root}\n",
        "partition default: queues: must be a list of queues",
    ),
    "wrong type for resources": (
        REALISTIC.replace("resources: {max: {nvidia.com/gpu: 16}}", "resources: [gpu]"),
        "partition default: root.research.vision: resources: must be a mapping",
    ),
    "negative quantity": (
        REALISTIC.replace("max: {memory: 300Gi}", "max: {memory: -300Gi}"),
        "partition default: root.prod.api: resources.max.memory: '-300Gi' must not be negative",
    ),
    "fractional bytes": (
        REALISTIC.replace("max: {memory: 100G}", "max: {memory: 1.5}"),
        # YuniKorn reads the text "1.5" (not a float), and takes whole numbers only.
        "partition default: root.prod.web.frontend@eu: resources.max.memory: '1.5': YuniKorn "
        "takes whole numbers only",
    ),
    "unknown suffix": (
        REALISTIC.replace("max: {memory: 50G}", "max: {memory: 50GB}"),
        "partition default: root.prod.web.static/assets: resources.max.memory: unknown suffix",
    ),
    "duplicate sibling names": (
        REALISTIC.replace("- name: api", "- name: web"),
        "partition default: root.prod: queues[1].name: duplicate queue name 'web'",
    ),
    "child max above parent": (
        REALISTIC.replace("max: {memory: 300Gi}", "max: {memory: 900Gi}"),
        "partition default: root.prod.api: resources.max.memory: max 900Gi is above",
    ),
    "guarantees above the parent": (
        REALISTIC.replace("guaranteed: {memory: 150Gi}", "guaranteed: {memory: 250Gi}"),
        "partition default: root.prod: resources.guaranteed.memory: children's guarantees",
    ),
    "invalid policy value": (
        REALISTIC.replace("preemption.policy: fence", "preemption.policy: fenced"),
        "partition default: root.prod: properties.preemption.policy: 'fenced'",
    ),
    "unparsable delay": (
        REALISTIC.replace("preemption.delay: 30s", "preemption.delay: soon"),
        "partition default: root.prod.web: properties.preemption.delay: 'soon'",
    ),
    "root with resources": (
        REALISTIC.replace(
            'submitacl: "*"', 'submitacl: "*"\n        resources: {max: {memory: 1}}'
        ),
        "partition default: root: resources: the root queue carries no resources",
    ),
    "second partition broken (all or nothing)": (
        REALISTIC.replace("nvidia.com/gpu: 64", "nvidia.com/gpu: lots"),
        "partition gpu-farm: root.train: resources.max.nvidia.com/gpu: 'lots'",
    ),
    "not a mapping": ("- just\n- a list\n", "must be a mapping with 'partitions'"),
    "not YAML": ("partitions: [\n", "line"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_refused_with_file_and_path_and_changes_nothing(tmp_path, case):
    run("import_config", write(tmp_path, REALISTIC, "good.yaml"))
    before, before_snapshots = database_state(), snapshots()
    text, expected = BAD_INPUTS[case]
    path = write(tmp_path, text, "bad.yaml")
    with pytest.raises(CommandError) as refused:
        run("import_config", path)
    message = str(refused.value)
    assert f"{path}: " in message
    assert expected in message
    assert "nothing was changed" in message
    assert database_state() == before and snapshots() == before_snapshots


def test_oversized_file_is_refused_before_parsing(tmp_path, settings):
    settings.CONFIG_MAX_BYTES = 2048
    path = write(tmp_path, REALISTIC + "#" * 4096)
    with pytest.raises(CommandError, match="over the 2048-byte limit"):
        run("import_config", path)
    assert database_state() == ([], [], 0, 0)


def test_several_errors_are_reported_together(tmp_path):
    text = REALISTIC.replace("preemption.policy: fence", "preemption.policy: x").replace(
        "max: {memory: 50G}", "max: {memory: 50GB}"
    )
    with pytest.raises(CommandError) as refused:
        run("import_config", write(tmp_path, text))
    assert "2 problem(s)" in str(refused.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        run("import_config", str(tmp_path / "absent.yaml"))


def test_revert_command_restores_an_old_revision(tmp_path):
    run("import_config", write(tmp_path, REALISTIC))
    changed = REALISTIC.replace("max: {memory: 300Gi}", "max: {memory: 250Gi}")
    run("import_config", write(tmp_path, changed, "changed.yaml"))
    version = Partition.objects.get(name="default").version
    revert = ("revert_config", "--partition", "default", "--to", "1")
    output = run(*revert, "--partition-version", str(version))
    assert "revision 3 restores revision 1" in output
    revisions = {r.number: r for r in Partition.objects.get(name="default").revisions.all()}
    assert revisions[3].snapshot == revisions[1].snapshot
    version = Partition.objects.get(name="default").version
    assert "already equals revision 1" in run(*revert, "--partition-version", str(version))


def test_revert_command_errors_name_the_problem():
    with pytest.raises(CommandError, match="partition 'nope' does not exist"):
        run("revert_config", "--partition", "nope", "--to", "1", "--partition-version", "1")


def test_the_revert_command_needs_the_version_reviewed_and_refuses_a_stale_one(tmp_path):
    """A revert replaces the whole config: without the version the admin reviewed, or with one
    a later save made stale, it changes nothing and the error names the option and the version
    the partition is at now."""
    run("import_config", write(tmp_path, REALISTIC))
    changed = REALISTIC.replace("max: {memory: 300Gi}", "max: {memory: 250Gi}")
    run("import_config", write(tmp_path, changed, "changed.yaml"))
    revisions = ConfigRevision.objects.count()
    with pytest.raises(CommandError, match=r"--partition-version: .* at version 2 now"):
        run("revert_config", "--partition", "default", "--to", "1")
    with pytest.raises(CommandError, match=r"--partition-version: .* changed since version 1 .*"
                       r"at version 2 now"):  # fmt: skip
        run("revert_config", "--partition", "default", "--to", "1", "--partition-version", "1")
    assert ConfigRevision.objects.count() == revisions


def test_import_prints_the_warnings_the_console_and_the_api_show(tmp_path):
    """Valid settings worth a second look never block an import, and are printed (stderr)
    both by a dry run and by the import itself: the same lines the console's preview shows."""
    text = REALISTIC.replace("max: {memory: 300Gi}", "max: {memroy: 300Gi}")
    path = write(tmp_path, text)
    typo = (
        f"{path}: warning: partition default: queues[root.prod.api].max.memroy: no node, task "
        "or other queue knows the resource type 'memroy'; did you mean memory?"
    )
    parent_delay = f"{path}: warning: partition default: queues[root.prod.web].properties."
    for dry_run in (["--dry-run"], []):
        out, err = io.StringIO(), io.StringIO()
        call_command("import_config", path, *dry_run, stdout=out, stderr=err)
        assert typo in err.getvalue().splitlines()
        assert parent_delay + "preemption.delay: YuniKorn passes this value" in err.getvalue()
    assert Queue.objects.get(path="root.prod.api").max == {"memroy": 300 * 1024**3}
