"""Importing a queues.yaml in the browser (admins): preview, save, errors; and the export link."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.support.console import DEMO_CONFIG, import_demo, nightly_tasks, signed_in_client

pytestmark = pytest.mark.django_db

URL = "/history/import/"


def demo_yaml(**replacements: str) -> str:
    text = Path(DEMO_CONFIG).read_text()
    for old, new in replacements.items():
        assert old in text
        text = text.replace(old, new)
    return text


SHRUNK = {'max: {memory: 512Gi, vcore: "200"}': 'max: {memory: 300Gi, vcore: "200"}'}


def test_only_admins_may_import():
    import_demo()
    assert signed_in_client("admin").get(URL).status_code == 200
    assert signed_in_client("operator").get(URL).status_code == 403
    viewer = signed_in_client("viewer")
    body = {"text": demo_yaml(), "comment": "x", "action": "save"}
    assert viewer.post(URL, body).status_code == 403
    assert ConfigRevision.objects.count() == 1


def test_preview_shows_the_changes_and_saves_nothing():
    import_demo()
    admin = signed_in_client("admin")
    body = {"text": demo_yaml(**SHRUNK), "comment": "shrink", "action": "preview"}
    response = admin.post(URL, body)
    page = response.content.decode()
    assert response.status_code == 200
    assert "What the import would change" in page and "root.batch.nightly" in page
    assert "512Gi" in page and "300Gi" in page
    assert 'value="save"' in page  # the Save button comes with a preview
    assert ConfigRevision.objects.count() == 1


def test_save_imports_the_file_as_a_new_revision():
    import_demo()
    admin = signed_in_client("admin")
    upload = SimpleUploadedFile("queues.yaml", demo_yaml(**SHRUNK).encode(), "application/yaml")
    response = admin.post(URL, {"file": upload, "comment": "quarter end", "action": "save"})
    assert response.status_code == 302 and response["Location"] == "/history/?partition=default"
    revision = ConfigRevision.objects.order_by("-number").first()
    assert (revision.number, revision.comment, revision.kind) == (2, "quarter end", "import")
    assert Queue.objects.get(path="root.batch.nightly").max["memory"] == 300 * 1024**3
    followed = admin.get(response["Location"]).content.decode()
    assert 'saved as <a href="/history/default/2/">revision 2</a>' in followed


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"text": "partitions: [", "comment": "c"}, "line"),
        ({"text": demo_yaml(**{"preemption.policy: fence": "preemption.policy: fencing"}),
          "comment": "c"}, "fencing"),
        ({"text": "", "comment": "c"}, "Choose a file or paste the YAML."),
        ({"text": demo_yaml(), "comment": ""}, "This field is required."),
    ],
)  # fmt: skip
def test_bad_input_is_shown_in_place_and_saves_nothing(body, message):
    import_demo()
    admin = signed_in_client("admin")
    response = admin.post(URL, {**body, "action": "save"})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert ConfigRevision.objects.count() == 1


def test_the_history_page_links_the_export_and_the_export_is_the_yaml():
    import_demo()
    viewer = signed_in_client("viewer")
    page = viewer.get("/history/?partition=default").content.decode()
    assert "/api/v1/partitions/default/config.yaml" in page
    assert URL not in page  # viewers do not see the import
    exported = viewer.get("/api/v1/partitions/default/config.yaml")
    assert exported.status_code == 200 and b"nightly" in exported.content
    assert URL in signed_in_client("admin").get("/history/?partition=default").content.decode()


def test_save_refuses_when_the_partition_changed_since_the_preview():
    """The preview carries the version it compared against; a change saved meanwhile (which
    the admin never saw in the preview) makes Save refuse and ask for a new preview."""
    import_demo()
    admin = signed_in_client("admin")
    body = {"text": demo_yaml(**SHRUNK), "comment": "shrink", "action": "preview"}
    page = admin.post(URL, body).content.decode()
    previewed = re.search(r'name="previewed" value="([^"]*)"', page).group(1)
    services.update_partition_settings("default", actor=None, comment="meanwhile", miss_percent=4)
    response = admin.post(URL, {**body, "action": "save", "previewed": html.unescape(previewed)})
    assert response.status_code == 409
    assert "Preview again" in response.content.decode()
    assert ConfigRevision.objects.count() == 2  # the import, 1, and the settings change, 2
    assert Queue.objects.get(path="root.batch.nightly").max["memory"] == 512 * 1024**3
    saved = admin.post(URL, {**body, "action": "save"})  # a save without a preview: no check
    assert saved.status_code == 302


# ---------------------------------------------------------------------------------------------
# Quota timers in the preview
# ---------------------------------------------------------------------------------------------


def preview_page(admin, text: str) -> str:
    response = admin.post(URL, {"text": text, "comment": "c", "action": "preview"})
    assert response.status_code == 200
    return response.content.decode()


def timer_lines(page: str) -> list[str]:
    """The preview's quota timer lines as text, e.g. "root.x: timer will start, due in 60s"."""
    found = re.search(r'<ul class="import-timers">(.*?)</ul>', page, re.S)
    items = re.findall(r"<li>(.*?)</li>", found.group(1)) if found else []
    return [html.unescape(re.sub(r"<[^>]+>", "", item)) for item in items]


def test_the_preview_lists_the_timer_a_lowered_max_over_usage_starts_and_its_plan():
    """nightly uses 400Gi; the file lowers its max to 300Gi: the inherited 60s quota delay of
    root.batch starts a timer, and its plan takes t3 (priority 1, newest) first. Saving then
    starts exactly that timer."""
    partition = import_demo()
    nightly_tasks(partition)
    admin = signed_in_client("admin")
    page = preview_page(admin, demo_yaml(**SHRUNK))
    assert timer_lines(page) == ["root.batch.nightly: timer will start, due in 60s"]
    assert "Quota enforcement on root.batch.nightly" in page
    assert re.search(r"<th scope=\"row\">t3</th>", page)
    assert not QuotaTimer.objects.exists()  # a preview starts nothing

    admin.post(URL, {"text": demo_yaml(**SHRUNK), "comment": "c", "action": "save"})
    timer = QuotaTimer.objects.get(status=TimerStatus.PENDING)
    assert (timer.queue_path, timer.delay_seconds) == ("root.batch.nightly", 60)


def test_the_preview_lists_timers_it_would_reset_and_cancel():
    partition = import_demo()
    nightly_tasks(partition)
    services.update_queue(
        "default", "root.batch.nightly", actor=None, comment="lower",
        version=Queue.objects.get(path="root.batch.nightly").version,
        max={"memory": 350 * 1024**3, "vcore": 200_000},
    )  # fmt: skip
    assert QuotaTimer.objects.filter(status=TimerStatus.PENDING).count() == 1
    admin = signed_in_client("admin")
    # Another lower max resets the pending timer ...
    lowered = preview_page(admin, demo_yaml(**SHRUNK))
    assert timer_lines(lowered) == ["root.batch.nightly: timer will be reset, due in 60s"]
    # ... and the demo file (512Gi again: a pure increase over 350Gi) cancels it.
    raised = preview_page(admin, demo_yaml())
    assert timer_lines(raised) == ["root.batch.nightly: its pending timer will be cancelled"]
    assert "Quota enforcement on" not in raised


def test_the_preview_says_when_no_timer_changes_and_a_new_partition_starts_none():
    import_demo()
    admin = signed_in_client("admin")
    page = preview_page(admin, demo_yaml())
    assert "No quota timer would start, reset or be cancelled." in page
    other = demo_yaml(**{"  - name: default": "  - name: other"})
    new = preview_page(admin, other)
    assert "A new partition starts no quota timer." in new and timer_lines(new) == []


def test_the_preview_warns_about_a_resource_type_nothing_knows():
    """``memroy`` is taken as a new resource type (valid: any name is), and the preview says
    that nothing else knows it; Save stays offered."""
    import_demo()
    admin = signed_in_client("admin")
    typo = {'max: {memory: 512Gi, vcore: "200"}': 'max: {memroy: 512Gi, vcore: "200"}'}
    body = {"text": demo_yaml(**typo), "comment": "typo", "action": "preview"}
    response = admin.post(URL, body)
    page = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert (
        "queues[root.batch.nightly].max.memroy: no node, task or other queue knows the resource "
        "type 'memroy'; did you mean memory?"
    ) in page
    assert 'value="save"' in page
    assert ConfigRevision.objects.count() == 1
