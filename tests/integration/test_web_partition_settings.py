"""The partition settings page: every setting shown to readers, the form to admins only, a save
that makes one revision, a stale or wrong form that saves nothing and says why."""

from __future__ import annotations

import html

import pytest

from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition
from scheduler_admin.web.partition_settings.forms import PartitionSettingsForm
from tests.support.console import import_demo, signed_in_client

pytestmark = pytest.mark.django_db

URL = "/partitions/default/settings/"


@pytest.fixture
def partition() -> Partition:
    return import_demo()


def form_as_saved(partition: Partition, **changes: str) -> dict[str, str]:
    """What the browser sends for the form as the page shows it (unticked boxes left out)."""
    partition.refresh_from_db()
    initial = PartitionSettingsForm.initial_for(partition.settings_config(), partition.version)
    body = {key: str(value) for key, value in initial.items() if value is not False}
    body.update(changes)
    return {key: value for key, value in body.items() if value is not None}


def test_a_viewer_reads_every_setting_without_a_form(partition):
    page = signed_in_client("viewer").get(URL)
    assert page.status_code == 200
    text = page.content.decode()
    for name in ("miss_percent", "victim_strategy", "max_victims", "soft_eviction"):
        assert f"<code>{name}</code>" in text
    assert '<form method="post" action="/partitions/default/settings/' not in text
    assert "Only an admin may change these settings." in text


def test_the_dashboard_links_to_the_settings(partition):
    dashboard = signed_in_client("viewer").get("/?partition=default").content.decode()
    assert f'href="{URL}"' in dashboard


def test_an_admin_saves_the_settings_as_one_revision(partition):
    admin = signed_in_client("admin")
    assert 'name="max_victims"' in admin.get(URL).content.decode()
    before = ConfigRevision.objects.filter(partition=partition).count()
    body = form_as_saved(
        partition, max_victims="3", victim_strategy="multiple", soft_eviction="on",
        default_preemption_delay="1m30s", comment="gangs clean up themselves",
    )  # fmt: skip
    response = admin.post(URL, body)
    assert response.status_code == 302 and response["Location"] == URL
    partition.refresh_from_db()
    assert (partition.max_victims, partition.victim_strategy, partition.soft_eviction) == (
        3,
        ["multiple"],
        True,
    )
    assert partition.default_preemption_delay == 90
    revisions = ConfigRevision.objects.filter(partition=partition)
    assert revisions.count() == before + 1
    assert revisions.latest("number").comment == "gangs clean up themselves"
    event = AuditEvent.objects.get(data__comment="gangs clean up themselves")
    changed = {change["field"] for change in event.data["changes"]}
    assert {"max_victims", "victim_strategy", "soft_eviction"} <= changed
    assert event.actor.username == "user-admin"
    page = admin.get(URL).content.decode()
    assert "Saved the settings of default as" in page
    assert 'value="3"' in page  # the form shows what was saved


def test_unticking_a_box_turns_the_setting_off(partition):
    admin = signed_in_client("admin")
    assert partition.preemption_enabled is True
    response = admin.post(URL, form_as_saved(partition, preemption_enabled=None, comment="off"))
    assert response.status_code == 302
    partition.refresh_from_db()
    assert partition.preemption_enabled is False


def test_a_form_read_before_another_save_saves_nothing(partition):
    admin = signed_in_client("admin")
    stale = form_as_saved(partition, miss_percent="9", comment="mine")
    services.update_partition_settings("default", actor=None, comment="theirs", miss_percent=4)
    version = Partition.objects.get(name="default").version
    response = admin.post(URL, stale)
    assert response.status_code == 200
    text = html.unescape(response.content.decode())
    assert "Someone saved this partition since you opened the page" in text
    partition.refresh_from_db()
    assert (partition.miss_percent, partition.version) == (4, version)


def test_wrong_values_are_shown_in_place_and_nothing_is_saved(partition):
    admin = signed_in_client("admin")
    version = Partition.objects.get(name="default").version
    body = form_as_saved(partition, miss_percent="101", max_victims="0", comment="")
    response = admin.post(URL, body)
    text = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert "The change was refused; nothing was saved." in text
    assert "less than or equal to 100" in text
    assert "greater than or equal to 1" in text
    assert "A change comment is required to save." in text
    assert Partition.objects.get(name="default").version == version


def test_saving_the_values_already_saved_makes_no_revision(partition):
    admin = signed_in_client("admin")
    before = ConfigRevision.objects.filter(partition=partition).count()
    response = admin.post(URL, form_as_saved(partition, comment="no change"), follow=True)
    assert "Nothing to save" in response.content.decode()
    assert ConfigRevision.objects.filter(partition=partition).count() == before
