"""The Celery app carries the delivery guarantees SPEC 5 asks for."""

from __future__ import annotations

from scheduler_admin.celery import BEAT_SCHEDULE, _transport_options, app


def test_tasks_are_acknowledged_late_json_only_one_at_a_time() -> None:
    conf = app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]


def test_time_limit_stays_below_the_visibility_timeout() -> None:
    options = _transport_options("redis://127.0.0.1:6379/0")
    assert app.conf.task_time_limit < options["visibility_timeout"]
    assert app.conf.task_soft_time_limit < app.conf.task_time_limit
    assert _transport_options("sqla+sqlite:///x.sqlite3") == {}


def test_every_beat_entry_expires_before_its_next_tick() -> None:
    for name, entry in BEAT_SCHEDULE.items():
        assert entry["options"]["expires"] < entry["schedule"], name
