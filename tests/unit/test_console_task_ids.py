"""How the console shows task ids (``{{ id|task_id }}``): the agent's ``namespace/name@uid``
reads as the pod's name with the uid shortened, the whole id on hover; other ids as they are."""

from __future__ import annotations

import pytest

from scheduler_admin.web.templatetags.console import task_id

UID = "b069404c-7c53-5986-9513-2a7d2042fabf"


def test_an_agent_id_shows_the_pod_name_and_a_short_uid() -> None:
    html = str(task_id(f"spark/exec-1@{UID}"))
    assert html == (
        f'<span class="task-id" title="spark/exec-1@{UID}">spark/exec-1'
        '<span class="task-uid">@b069404c…</span></span>'
    )


@pytest.mark.parametrize("value", ["t1", "batch-0007", "user@example", "@" + UID, "", None])
def test_other_ids_show_as_they_are(value: object) -> None:
    assert str(task_id(value)) == (value or "")


def test_ids_are_escaped() -> None:
    assert "&lt;b&gt;" in str(task_id(f"<b>/x@{UID}"))
    assert "&lt;script&gt;" in str(task_id("<script>"))
