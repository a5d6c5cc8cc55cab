"""The history pages: revisions newest first, the diff of any two, one revision, and the
revert (admin only, after a confirmation) through ``queues.services.revert_config``."""

from __future__ import annotations

import pytest

from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue, RevisionKind
from tests.support.console import import_demo, signed_in_client

pytestmark = pytest.mark.django_db

GI = 1024**3


signed_in = signed_in_client


@pytest.fixture
def demo() -> Partition:
    """The demo config (revision 1) plus one change of root.batch.nightly's max (revision 2)."""
    import_demo()
    nightly = Queue.objects.get(path="root.batch.nightly")
    services.update_queue(
        "default", nightly.path, version=nightly.version, actor=None, comment="shrink nightly",
        max={"memory": 200 * GI, "vcore": 100_000},
    )  # fmt: skip
    return Partition.objects.get(name="default")


def test_the_list_shows_revisions_newest_first_with_links_and_a_compare_form(demo):
    page = signed_in("viewer").get("/history/").content.decode()
    assert page.index("Revision 2</a>") < page.index("Revision 1</a>")
    assert 'href="/history/default/2/"' in page and 'href="/history/default/1/"' in page
    assert "shrink nightly" in page and "Import" in page
    assert 'name="from" value="1" id="from-1" checked' in page
    assert 'name="to" value="2" id="to-2" checked' in page


def test_the_list_is_paged(demo):
    for number in range(3, 30):
        nightly = Queue.objects.get(path="root.batch.nightly")
        services.update_queue(
            "default", nightly.path, version=nightly.version, actor=None,
            comment=f"step {number}", max={"memory": (200 + number) * GI, "vcore": 100_000},
        )  # fmt: skip
    client = signed_in("viewer")
    first = client.get("/history/").content.decode()
    assert "Revision 29</a>" in first and "Revision 4</a>" not in first
    assert "Page 1 of 2" in first
    second = client.get("/history/", {"partition": "default", "page": "2"}).content.decode()
    assert "Revision 4</a>" in second and "Revision 29</a>" not in second
    assert client.get("/history/", {"page": "nonsense"}).status_code == 200


def qty(short: str, exact: str | None = None) -> str:
    """A quantity as pages render it: short, the exact value in the tooltip."""
    return f'<span class="qty" title="{exact or short}">{short}</span>'


def test_the_diff_of_two_revisions_shows_each_changed_field_old_and_new(demo):
    response = signed_in("viewer").get(
        "/history/diff/", {"partition": "default", "from": "1", "to": "2"}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Revision 1 → 2" in page
    assert "root.batch.nightly" in page
    # Humanised, with the exact quantity on hover.
    assert (
        '<code>max.memory</code></td><td class="old">'
        + qty("512Gi")
        + '</td><td class="new">'
        + qty("200Gi")
        + "</td>"
    ) in page
    assert (
        '<code>max.vcore</code></td><td class="old">'
        + qty("200")
        + '</td><td class="new">'
        + qty("100")
        + "</td>"
    ) in page
    assert "root.prod.web" not in page  # only what changed

    backwards = (
        signed_in("operator")
        .get("/history/diff/", {"partition": "default", "from": "2", "to": "1"})
        .content.decode()
    )
    assert f'<td class="old">{qty("200Gi")}</td><td class="new">{qty("512Gi")}</td>' in backwards


def test_the_diff_lists_added_queues_and_partition_settings(demo):
    config = demo.current_config()
    from dataclasses import replace

    from preemption.config import QueueConfig

    changed = replace(
        config.with_queue(QueueConfig.child_of("root.batch", "team#1", max={"memory": GI})),
        settings=replace(config.settings, miss_percent=5, default_preemption_delay=90),
    )
    services.save_partition_config(changed, actor=None, comment="add team#1")
    page = (
        signed_in("viewer")
        .get("/history/diff/", {"partition": "default", "from": "2", "to": "3"})
        .content.decode()
    )
    assert "Queues added" in page and "root.batch.team#1" in page
    assert '<code>miss_percent</code></th><td class="old">0</td><td class="new">5</td>' in page
    # Delays are whole seconds in the config; pages show them as durations, never bare numbers.
    assert (
        '<code>default_preemption_delay</code></th><td class="old">30s</td>'
        '<td class="new">1m30s</td>'
    ) in page
    assert "Queues removed" not in page
    snapshot = signed_in("viewer").get("/history/default/3/").content.decode()
    settings = snapshot.split("The configuration as saved")[1].split("</table>")[0]
    assert "<code>default_preemption_delay</code></th><td>1m30s</td>" in settings
    assert "<code>quota_preemption_enabled</code></th><td>on</td>" in settings
    assert "True" not in settings and "False" not in settings


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "2", "to": "2"}, "Pick two different revisions to compare."),
        ({"from": "1", "to": "99"}, "Partition default has no revision 99."),
        ({"from": "abc", "to": "2"}, "Enter a whole number."),
        ({"from": "", "to": "2"}, "This field is required."),
        ({"from": "-3", "to": "2"}, "greater than or equal to 1"),
    ],
)
def test_a_bad_diff_choice_is_an_inline_message(demo, params, message):
    response = signed_in("viewer").get("/history/diff/", {"partition": "default", **params})
    page = response.content.decode()
    assert response.status_code == 200
    assert message in page and 'class="error"' in page and 'aria-invalid="true"' in page
    assert "Queues changed" not in page


def test_a_revision_page_shows_its_changes_and_snapshot_and_revert_only_to_admins(demo):
    page = signed_in("viewer").get("/history/default/1/").content.decode()
    assert "Revision 1 of partition default" in page and "Initial configuration" in page
    assert "root.prod.web" in page  # in the snapshot and as an added queue
    assert "Revert to this revision" not in page
    assert (
        "Revert to this revision"
        not in signed_in("operator").get("/history/default/1/").content.decode()
    )
    admin_page = signed_in("admin").get("/history/default/1/").content.decode()
    assert 'href="/history/default/1/revert/"' in admin_page
    current = signed_in("admin").get("/history/default/2/").content.decode()
    assert "Changes against" in current and "Revert to this revision" not in current


@pytest.mark.parametrize(
    "url",
    ["/history/default/99/", "/history/default/0/", "/history/nope/1/",
     "/history/default/99/revert/", "/history/default/abc/", "/history/?partition=nope",
     "/history/diff/?partition=nope&from=1&to=2"],
)  # fmt: skip
def test_unknown_revisions_and_partitions_are_404(demo, url):
    assert signed_in("admin").get(url).status_code == 404


def test_the_revert_confirmation_shows_what_will_change(demo):
    page = signed_in("admin").get("/history/default/1/revert/").content.decode()
    assert "current configuration → revision 1" in page
    assert f'<td class="old">{qty("200Gi")}</td><td class="new">{qty("512Gi")}</td>' in page
    assert 'value="Revert to revision 1"' in page and "csrfmiddlewaretoken" in page


def test_revert_by_an_admin_creates_a_new_revision_with_the_old_config(demo):
    client = signed_in("admin")
    response = client.post(
        "/history/default/1/revert/", {"comment": "undo the shrink", "version": demo.version}
    )
    assert response.status_code == 302 and response["Location"] == "/history/?partition=default"
    latest = ConfigRevision.objects.filter(partition=demo).order_by("-number").first()
    assert latest.number == 3 and latest.kind == RevisionKind.REVERT
    assert latest.reverted_from == 1 and latest.comment == "undo the shrink"
    assert latest.author_name == "user-admin"
    assert (
        latest.snapshot["queues"]
        == ConfigRevision.objects.get(partition=demo, number=1).snapshot["queues"]
    )
    assert Queue.objects.get(path="root.batch.nightly").max["memory"] == 512 * GI
    page = client.get(response["Location"]).content.decode()
    assert (
        'Reverted partition default to <a href="/history/default/1/">revision 1</a> as '
        '<a href="/history/default/3/">revision 3</a>.'
    ) in page  # both revisions link to their pages


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_revert_by_a_lower_role_is_refused(demo, role):
    client = signed_in(role)
    response = client.post(
        "/history/default/1/revert/", {"comment": "sneaky", "version": demo.version}
    )
    assert response.status_code == 403
    assert client.get("/history/default/1/revert/").status_code == 403
    assert ConfigRevision.objects.filter(partition=demo).count() == 2


def test_revert_without_a_comment_or_from_a_stale_page_saves_nothing(demo):
    client = signed_in("admin")
    blank = client.post("/history/default/1/revert/", {"comment": "  ", "version": demo.version})
    assert blank.status_code == 400 and "This field is required." in blank.content.decode()
    stale = client.post("/history/default/1/revert/", {"comment": "undo", "version": 1})
    assert stale.status_code == 400
    assert "The configuration changed since you opened this page" in stale.content.decode()
    assert f'name="version" value="{demo.version}"' in stale.content.decode()
    assert ConfigRevision.objects.filter(partition=demo).count() == 2


def test_revert_of_a_snapshot_the_rules_now_reject_lists_the_errors(demo):
    # Revision 3 turns quota preemption on for adhoc while its guarantee equals its max; it is
    # rejected today, so we write it as history directly (an old rule set could have allowed it).
    bad = demo.current_config()
    adhoc = bad.queue("root.batch.adhoc")
    from dataclasses import replace

    bad = bad.with_queue(replace(adhoc, guaranteed={"memory": 256 * GI}))
    ConfigRevision.objects.create(
        partition=demo, number=3, kind=RevisionKind.CHANGE, created_at=demo.created_at,
        author_name="old-rules", comment="before the rule", snapshot=bad.to_json(),
    )  # fmt: skip
    response = signed_in("admin").post(
        "/history/default/3/revert/", {"comment": "back", "version": demo.version}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "The revert was not saved" in page and "queues[root.batch.adhoc].max.memory" in page
    assert ConfigRevision.objects.filter(partition=demo).count() == 3
