"""The fences page: fences drawn as boundaries, and what picking a queue highlights both ways
(SPEC 4.2 law 7: a fence keeps the search of the tasks inside from reaching out, not the other
way round)."""

from __future__ import annotations

import io
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from scheduler_admin.queues import services
from scheduler_admin.queues.models import Queue

pytestmark = pytest.mark.django_db

PROD = ["root.prod.web", "root.prod.api"]
RESEARCH = ["root.research.vision", "root.research.nlp"]
BATCH = ["root.batch.nightly", "root.batch.adhoc"]


class _Tree(HTMLParser):
    """Classes of every queue in the drawn tree, by ``data-path``."""

    def __init__(self) -> None:
        super().__init__()
        self.classes: dict[str, set[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "li" and values.get("data-path"):
            self.classes[values["data-path"] or ""] = set((values.get("class") or "").split())


def tree_classes(html: str) -> dict[str, set[str]]:
    parser = _Tree()
    parser.feed(html)
    return parser.classes


def having(classes: dict[str, set[str]], name: str) -> set[str]:
    return {path for path, held in classes.items() if name in held}


@pytest.fixture
def viewer() -> Client:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    user = get_user_model().objects.create_user("vic", password="pw-12345678")
    user.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(user)
    return client


def disable(path: str) -> None:
    queue = Queue.objects.get(path=path)
    services.update_queue(
        "default", path, version=queue.version, actor=None, comment="no victims here",
        properties={**queue.properties, "preemption.policy": "disabled"},
    )  # fmt: skip


def test_the_tree_frames_each_fence_and_every_queue_is_a_pick_link(viewer):
    response = viewer.get("/fences/")
    assert response.status_code == 200
    page = response.content.decode()
    classes = tree_classes(page)
    assert set(classes) == {"root", "root.prod", "root.research", "root.batch", *PROD,
                            *RESEARCH, *BATCH}  # fmt: skip
    assert having(classes, "fence") == {"root.prod"}
    assert '<span class="fence-label">fence</span>' in page
    assert 'href="?partition=default&amp;queue=root.prod.web"' in page
    assert "No queue picked" in page and "may-preempt" not in page


def test_a_fenced_queue_may_preempt_only_inside_its_fence_but_is_reachable_from_outside(viewer):
    page = viewer.get("/fences/", {"queue": "root.prod.web"}).content.decode()
    classes = tree_classes(page)
    assert having(classes, "selected") == {"root.prod.web"}
    assert having(classes, "in-scope") == {"root.prod", *PROD}
    assert having(classes, "may-preempt") == {"root.prod", "root.prod.api"}
    # The fence is one-way: every unfenced leaf searches from root, which holds prod.web.
    assert having(classes, "reachable-from") == {"root.prod.api", *RESEARCH, *BATCH}
    assert "Tasks of root.prod.web may preempt in: root.prod.api." in page
    assert (
        "Preemption may reach root.prod.web from: root.prod.api, root.research.vision, "
        "root.research.nlp, root.batch.nightly, root.batch.adhoc." in page
    )
    assert "<strong>root.prod</strong> (a fence)" in page
    assert 'aria-current="true">web</a>' in page


def test_an_unfenced_queue_may_preempt_everywhere_but_not_from_inside_a_fence(viewer):
    page = viewer.get("/fences/", {"queue": "root.batch.nightly"}).content.decode()
    classes = tree_classes(page)
    assert having(classes, "in-scope") == set(classes)  # its search is bounded only by root
    assert having(classes, "may-preempt") == set(classes) - {"root.batch.nightly"}
    assert having(classes, "reachable-from") == {*RESEARCH, "root.batch.adhoc"}
    assert (
        "Tasks of root.batch.nightly may preempt in: root.prod.web, root.prod.api, "
        "root.research.vision, root.research.nlp, root.batch.adhoc." in page
    )
    assert "no fence above: the whole partition" in page


def test_picking_a_parent_covers_its_leaves_preempting_each_other(viewer):
    page = viewer.get("/fences/", {"queue": "root.prod"}).content.decode()
    classes = tree_classes(page)
    assert having(classes, "may-preempt") == {"root.prod", *PROD}
    assert having(classes, "reachable-from") == {*PROD, *RESEARCH, *BATCH}


def test_a_disabled_queue_is_marked_and_never_a_victim_source(viewer):
    disable("root.batch.adhoc")
    page = viewer.get("/fences/", {"queue": "root.batch.nightly"}).content.decode()
    classes = tree_classes(page)
    assert having(classes, "disabled") == {"root.batch.adhoc"}
    assert having(classes, "no-victims") == {"root.batch.adhoc"}
    assert "root.batch.adhoc" not in having(classes, "may-preempt")
    assert "Tasks of root.batch.nightly may preempt in: root.prod.web, root.prod.api, " \
        "root.research.vision, root.research.nlp." in page  # fmt: skip
    assert "Within reach but never victims (preemption disabled): root.batch.adhoc." in page

    page = viewer.get("/fences/", {"queue": "root.batch.adhoc"}).content.decode()
    assert having(tree_classes(page), "reachable-from") == set()
    assert "root.batch.adhoc has preemption disabled, so no task in it is preempted." in page


def test_a_disabled_parent_marks_its_subtree_with_where_it_comes_from(viewer):
    disable("root.research")
    page = viewer.get("/fences/").content.decode()
    assert having(tree_classes(page), "disabled") == {"root.research", *RESEARCH}
    assert "disabled (from root.research)" in page


def test_an_unknown_queue_or_partition_is_an_inline_message_or_404(viewer):
    response = viewer.get("/fences/", {"queue": "root.nope"})
    assert response.status_code == 200
    assert (
        "There is no queue &#x27;root.nope&#x27; in partition default." in response.content.decode()
    )
    assert "may-preempt" not in response.content.decode()
    assert viewer.get("/fences/", {"partition": "nope"}).status_code == 404


def test_the_page_needs_a_signed_in_user():
    response = Client().get("/fences/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_partition_of_three_thousand_queues_is_drawn_in_one_page(viewer):
    """Everything is computed per request, over the whole tree (its speed is not asserted here:
    tests never time; the dashboard benchmark covers page speed)."""
    from dataclasses import replace

    from preemption.config import QueueConfig
    from scheduler_admin.queues.models import Partition

    config = Partition.objects.get(name="default").current_config()
    queues = list(config.queues)
    for team in range(60):
        parent = QueueConfig.child_of(
            "root.research", f"t{team}",
            properties={"preemption.policy": "fence"} if team % 10 == 0 else {},
        )  # fmt: skip
        queues.append(parent)
        queues.extend(QueueConfig.child_of(parent.path, f"j{job}") for job in range(50))
    services.save_partition_config(replace(config, queues=tuple(queues)), actor=None,
                                   comment="grow")  # fmt: skip

    response = viewer.get("/fences/", {"queue": "root.research.t10.j7"})
    classes = tree_classes(response.content.decode())
    assert len(classes) == 10 + 60 * 51
    assert len(having(classes, "fence")) == 1 + 6
    assert having(classes, "may-preempt") == {"root.research.t10"} | {
        f"root.research.t10.j{job}" for job in range(50) if job != 7
    }
    reach = having(classes, "reachable-from")
    assert {"root.research.t10.j8", "root.research.t3.j1", "root.batch.adhoc"} <= reach
    assert "root.research.t0.j1" not in reach and "root.prod.web" not in reach  # fenced away
