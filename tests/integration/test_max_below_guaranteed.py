"""A max below the guarantee is refused with ONE message naming the resource and both values, in
the console's queue edit (save and preview), the console's import, the API and the import command.

root.batch.nightly (demo) inherits ``quota.preemption.delay: 60s`` from root.batch; with a delay
the engine also requires max > guaranteed, a rule that used to report the same pair a second time.
"""

from __future__ import annotations

import html
import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.api.conftest import assert_error, client_for
from tests.support.console import DEMO_CONFIG, NIGHTLY, import_demo, signed_in_client

pytestmark = pytest.mark.django_db

MESSAGE = "max memory 10Gi is below guaranteed 20Gi"
#: What the quota-delay rule says about max == guaranteed; it must not repeat this case.
SECOND_RULE = "greater than guaranteed"
API_QUEUE = f"/api/v1/partitions/default/queues/{NIGHTLY}/"


@pytest.fixture
def nightly() -> Queue:
    import_demo()
    return Queue.objects.get(path=NIGHTLY)


def edit_form(queue: Queue, action: str) -> dict[str, str]:
    """The queue page's edit form with memory guaranteed 20Gi, max 10Gi (vcore unchanged)."""
    return {
        "action": action, "version": str(queue.version), "comment": "too small",
        "res-TOTAL_FORMS": "2", "res-INITIAL_FORMS": "2",
        "res-0-name": "memory", "res-0-guaranteed": "20Gi", "res-0-max": "10Gi",
        "res-1-name": "vcore", "res-1-guaranteed": "", "res-1-max": "200",
        "prop-TOTAL_FORMS": "0", "prop-INITIAL_FORMS": "0",
    }  # fmt: skip


@pytest.mark.parametrize("action", ["save", "preview"])
def test_the_queue_edit_shows_one_message_next_to_the_max(nightly, action):
    client = signed_in_client("operator")
    response = client.post(f"/partitions/default/queues/{NIGHTLY}/", edit_form(nightly, action))
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert page.count(MESSAGE) == 1, page
    assert SECOND_RULE not in page and "above max" not in page
    max_cell = page.split('name="res-0-max"')[1].split("</td>")[0]
    assert MESSAGE in max_cell
    assert ConfigRevision.objects.count() == 1


def test_the_api_answers_400_with_one_message(nightly):
    operator: APIClient = client_for("operator")
    body = {"guaranteed": {"memory": "20Gi"}, "max": {"memory": "10Gi"}, "comment": "too small"}
    for url in (API_QUEUE, API_QUEUE + "?dry_run=true"):
        refused = assert_error(operator.patch(url, {**body, "version": 1}, format="json"), 400)
        assert refused["errors"] == {f"queues[{NIGHTLY}].max.memory": [MESSAGE]}, url
    assert ConfigRevision.objects.count() == 1


def test_an_import_gets_one_message(nightly, tmp_path):
    text = Path(DEMO_CONFIG).read_text()
    old = 'max: {memory: 512Gi, vcore: "200"}'
    assert old in text
    text = text.replace(old, "guaranteed: {memory: 20Gi}\n                  max: {memory: 10Gi}")
    admin = signed_in_client("admin")
    response = admin.post("/history/import/", {"text": text, "comment": "c", "action": "preview"})
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert page.count(MESSAGE) == 1 and SECOND_RULE not in page
    assert f"{NIGHTLY}: resources.max.memory: {MESSAGE}" in page

    upload = tmp_path / "queues.yaml"
    upload.write_text(text)
    with pytest.raises(CommandError) as refused:
        call_command("import_config", str(upload), stdout=io.StringIO())
    assert str(refused.value).count(MESSAGE) == 1
    assert ConfigRevision.objects.count() == 1
