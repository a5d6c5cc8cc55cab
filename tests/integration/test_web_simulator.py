"""The simulator page: the engine's plan for a hypothetical max, a pending ask or a job, shown
with every candidate's explanation, and nothing saved (SPEC 8). Real PostgreSQL, real engine."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer
from scheduler_admin.queues.models import ConfigRevision, Partition

pytestmark = pytest.mark.django_db

URL = "/simulator/"
START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def partition() -> Partition:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    return Partition.objects.get(name="default")


@pytest.fixture
def viewer() -> Client:
    """Simulating saves nothing, so the lowest role may do it."""
    user = get_user_model().objects.create_user("vera", password="pw-12345678")
    user.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(user)
    return client


def quota(queue: str, **max_rows: str) -> dict[str, str]:
    body = {
        "partition": "default", "policy": "quota", "queue": queue,
        "max-TOTAL_FORMS": str(len(max_rows) + 1), "max-INITIAL_FORMS": "0",
    }  # fmt: skip
    for index, (name, value) in enumerate(max_rows.items()):
        body[f"max-{index}-name"] = name
        body[f"max-{index}-max"] = value
    return body


def nothing_written(before: tuple[int, int, int]) -> bool:
    after = (
        ConfigRevision.objects.count(),
        QuotaTimer.objects.count(),
        PreemptionRun.objects.count(),
    )
    untouched = not Allocation.objects.exclude(state=AllocationState.RUNNING).exists()
    return after == before and untouched


def counts() -> tuple[int, int, int]:
    return ConfigRevision.objects.count(), QuotaTimer.objects.count(), PreemptionRun.objects.count()


def test_the_form_lists_queues_and_pending_asks_and_a_queue_link_presets_it(partition, viewer):
    ingest_cluster_state(
        partition,
        {
            "asks": [
                {"id": "ask-1", "queue": "root.research.vision", "resources": {"memory": "1Gi"}}
            ]
        },
        actor=None,
    )
    page = viewer.get(URL, {"partition": "default", "queue": "root.batch.nightly"}).content.decode()
    assert '<option value="root.batch.nightly" selected>' in page
    assert 'value="512Gi"' in page  # the queue's current max, ready to be lowered
    assert "ask-1 · root.research.vision" in page
    assert "Nothing was saved" not in page  # nothing simulated yet


def test_quota_simulation_shows_the_victims_and_saves_nothing(partition, viewer):
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": f"t{i}", "queue": "root.batch.nightly", "node": "n1", "priority": p,
                 "created_at": (START + timedelta(minutes=i)).isoformat(),
                 "resources": {"memory": "100Gi", "vcore": "10"}}
                for i, p in enumerate([10, 5, 1, 1])
            ],
        },
        actor=None,
    )  # fmt: skip
    before = counts()
    response = viewer.get(URL, quota("root.batch.nightly", memory="200Gi"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was saved." in page
    victims = page.split("<h4>Victims (2)</h4>")[1].split("</table>")[0]
    assert victims.index("t3") < victims.index("t2") and "t0" not in victims
    assert "Quota enforcement on root.batch.nightly with the new max" in page
    assert "Not needed: earlier victims already free enough." in page
    assert "Targets per leaf queue" in page
    assert nothing_written(before)


def test_ask_simulation_plans_inter_queue_preemption_with_explanations(partition, viewer):
    """vision is under its guarantee and its ask does not fit: nlp, above its own guarantee,
    gives up its newest task on the full node (SPEC 4.2)."""
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "200Gi", "vcore": "100"}}],
            "allocations": [
                {"id": f"nlp-{i}", "queue": "root.research.nlp", "node": "n1",
                 "created_at": (START + timedelta(minutes=i)).isoformat(),
                 "resources": {"memory": "100Gi", "vcore": "10"}}
                for i in range(2)
            ],
            "asks": [
                {"id": "vision-ask", "queue": "root.research.vision",
                 "created_at": START.isoformat(), "resources": {"memory": "50Gi"}},
            ],
        },
        actor=None,
    )  # fmt: skip
    before = counts()
    page = viewer.get(
        URL, {"partition": "default", "policy": "ask", "ask": "vision-ask"}
    ).content.decode()
    # The policy it was planned with, named in words (no section number of a document the
    # reader does not have).
    assert "Inter-queue preemption" in page
    assert "SPEC" not in page
    victims = page.split("<h4>Victims (1)</h4>")[1].split("</table>")[0]
    assert "nlp-1" in victims and "nlp-0" not in victims  # the newest goes
    # The same specific reason a run keeps, with its numbers, and the words link the glossary.
    assert "victim #1, 1st on n1 in the order: priority 0, non-originator, created " in victims
    assert "root.research.nlp usage memory 200Gi above guarantee" in victims
    assert "the ask still needed memory 50Gi on n1 before it, nothing after" in victims
    assert 'href="/glossary/#reason-victim"' in page
    assert "not needed: the ask fits n1 after victim #1 (nlp-1)" in page  # nlp-0
    assert "Node: <strong>n1</strong>" in page
    assert "complete" in page
    assert nothing_written(before)


def test_job_simulation_names_a_job_that_does_not_exist_inline(partition, viewer):
    page = viewer.get(
        URL, {"partition": "default", "policy": "job", "job": "nope"}
    ).content.decode()
    job_field = page.split('name="job"')[1].split("</fieldset>")[0]
    assert "No pending ask belongs to job &#x27;nope&#x27;." in job_field


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"policy": "ask", "ask": "ghost"}, 'name="ask"', "There is no pending ask"),
        ({"policy": "ask"}, 'name="ask"', "Choose a pending ask."),
        ({"policy": "quota", "queue": "", "max-TOTAL_FORMS": "1", "max-INITIAL_FORMS": "0"},
         'name="queue"', "Choose the queue whose max to simulate."),
        ({"policy": "quota", "queue": "root.nope", "max-TOTAL_FORMS": "1",
          "max-INITIAL_FORMS": "0"}, 'name="queue"', "Select a valid choice."),
        ({"policy": "warp"}, 'name="policy"', "Select a valid choice."),
    ],
)  # fmt: skip
def test_bad_input_is_shown_next_to_its_field(partition, viewer, params, field, message):
    response = viewer.get(URL, {"partition": "default", **params})
    page = response.content.decode()
    assert response.status_code == 200
    assert "nothing was simulated" in page and "Nothing was saved." not in page
    assert message in page.split(field, 1)[1].split("</fieldset>")[0]


def test_a_bad_quantity_in_the_new_max_is_shown_in_its_row(partition, viewer):
    response = viewer.get(URL, quota("root.batch.nightly", memory="-5Gi", vcore="ten"))
    page = response.content.decode()
    assert response.status_code == 200 and "nothing was simulated" in page
    memory_cell = page.split('name="max-0-max"')[1].split("</td>")[0]
    vcore_cell = page.split('name="max-1-max"')[1].split("</td>")[0]
    assert "must not be negative" in memory_cell
    assert "not a number" in vcore_cell
    assert 'value="-5Gi"' in page  # the input is kept


def test_an_unknown_partition_is_a_404(partition, viewer):
    assert viewer.get(URL, {"partition": "nope"}).status_code == 404
    assert viewer.get(URL, {"partition": "de\x00fault"}).status_code == 404  # not a 500


def test_a_nul_in_an_ask_id_is_an_inline_error(partition, viewer):
    response = viewer.get(URL, {"partition": "default", "policy": "ask", "ask": "a\x00b"})
    assert response.status_code == 200
    assert "Null characters are not allowed." in response.content.decode()
