"""Importing a queues.yaml in the browser (admins): preview, save, errors; and the export link."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.support.console import DEMO_CONFIG, import_demo, signed_in_client

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
