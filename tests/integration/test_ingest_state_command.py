"""``manage.py ingest_state``: the same checks as the API, and a bad file is a non-zero exit
naming the file and the field, with nothing changed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.cluster.models import Allocation, Node

pytestmark = pytest.mark.django_db

GOOD = {
    "nodes": [{"name": "n1", "capacity": {"memory": "1Ti"}}],
    "allocations": [{"id": "a1", "queue": "root.prod.web", "node": "n1", "priority": 2**31 - 1}],
}


@pytest.fixture
def demo(db):
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())


def ingest(path: Path) -> str:
    out = io.StringIO()
    call_command("ingest_state", str(path), stdout=out)
    return out.getvalue()


def test_a_good_file_is_ingested_and_a_repeat_changes_nothing(demo, tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps(GOOD))
    first = json.loads(ingest(path))
    assert first["changed"]["allocations"]["created"] == 1
    events = AuditEvent.objects.count()
    again = json.loads(ingest(path))
    assert not any(any(counts.values()) for counts in again["changed"].values())
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (json.dumps({**GOOD, "allocations": [{**GOOD["allocations"][0], "priority": 2**31}]}),
         "allocations[0].priority"),
        (json.dumps({**GOOD, "allocations": [{**GOOD["allocations"][0], "user": "\ud800"}]}),
         "allocations[0].user"),
        (json.dumps({**GOOD, "nodes": [{"name": "n1", "capacity": {"gpu\x00": 1}}]}),
         "nodes[0].capacity"),
        (json.dumps({**GOOD, "budgets": [{"name": "b", "allowed_disruptions": -1}]}),
         "budgets[0].allowed_disruptions"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("{nope", "not JSON"),
    ],
)  # fmt: skip
def test_a_bad_file_names_the_file_and_the_field_and_changes_nothing(
    demo, tmp_path, text, expected
):
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(CommandError) as refused:
        ingest(path)
    message = str(refused.value)
    assert str(path) in message and expected in message
    message.encode()  # printable: no lone surrogate echoed back
    assert not Node.objects.exists() and not Allocation.objects.exists()


def test_a_file_that_is_not_utf8_is_refused(demo, tmp_path):
    path = tmp_path / "state.json"
    path.write_bytes(b'{"nodes": [{"name": "\xff"}]}')
    with pytest.raises(CommandError, match="not UTF-8"):
        ingest(path)
