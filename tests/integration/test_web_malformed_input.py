"""Malformed input to the console's forms and pages: never a 5xx and nothing changed.

The answer is an inline message on the page (200, or the form's 400), a redirect with a message
(302), a plain 400 page from the request guard (a NUL character in a header), or a 404 for an
id that names nothing. Query and form values holding NUL reach the page's forms, which say
"Null characters are not allowed", or its filters, which match nothing. The same tables as the
API corpus are snapshotted around each request (``tests/api/test_malformed_input.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from scheduler_admin.base import limits
from scheduler_admin.enforcement.models import QuotaTimer
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Queue
from scheduler_admin.web.common import queue_url
from scheduler_admin.web.partition_settings.forms import PartitionSettingsForm
from tests.api.test_malformed_input import TOO_BIG, snapshot, yaml_with
from tests.support.console import NIGHTLY, import_demo, nightly_tasks, signed_in_client

pytestmark = pytest.mark.django_db

HUGE = 10**30
NUL_ROOT = "root\x00"
EVERY_ANSWER = frozenset({200, 302, 400, 404})


@dataclass(frozen=True)
class Page:
    label: str
    method: str
    url: str
    data: dict[str, Any] = field(default_factory=dict)
    role: str = "admin"
    status: frozenset[int] = EVERY_ANSWER
    #: Text the answer must hold (the inline message), HTML-escaped as the page shows it.
    says: str | None = None
    #: A session cookie to send (a hostile one), raw in the Cookie header.
    cookie: str | None = None


@pytest.fixture
def ctx() -> dict[str, Any]:
    """The demo partition with tasks in nightly and a pending quota timer on it."""
    partition = import_demo()
    nightly_tasks(partition)
    services.update_queue(
        "default", NIGHTLY, version=Queue.objects.get(partition=partition, path=NIGHTLY).version,
        actor=None, comment="shrink", max={"memory": 250 * 1024**3, "vcore": 200_000},
    )  # fmt: skip
    partition.refresh_from_db()
    queue = Queue.objects.get(partition=partition, path=NIGHTLY)
    return {
        "partition": partition,
        "queue_version": queue.version,
        "timer": QuotaTimer.objects.get(queue_path=NIGHTLY).pk,
    }


def edit_form(read: int, **overrides: str) -> dict[str, str]:
    """The queue edit form with one resource row and one property row."""
    body = {
        "action": "save", "version": str(read), "comment": "malformed",
        "res-TOTAL_FORMS": "1", "res-INITIAL_FORMS": "0",
        "res-0-name": "memory", "res-0-guaranteed": "", "res-0-max": "250Gi",
        "prop-TOTAL_FORMS": "1", "prop-INITIAL_FORMS": "0",
        "prop-0-key": "", "prop-0-value": "",
    }  # fmt: skip
    body.update(overrides)
    return body


def settings_form(partition: Any, **overrides: str) -> dict[str, str]:
    """The partition settings form as saved (boxes ticked as saved), with ``overrides``."""
    initial = PartitionSettingsForm.initial_for(partition.settings_config(), partition.version)
    body = {key: str(value) for key, value in initial.items() if value is not False}
    return {**body, "comment": "malformed", **overrides}


def pages(ctx: dict[str, Any]) -> list[Page]:
    queue = queue_url("default", NIGHTLY)
    form = lambda **changes: edit_form(ctx["queue_version"], **changes)  # noqa: E731
    version = ctx["partition"].version
    revert = "/history/default/1/revert/"
    imports = "/history/import/"
    settings_page = "/partitions/default/settings/"
    settings_body = lambda **changes: settings_form(ctx["partition"], **changes)  # noqa: E731
    return [
        Page("settings: partition NUL", "GET", "/partitions/%00/settings/", status={404}),
        Page("settings: version superscript", "POST", settings_page,
             settings_body(version="²"), status={200}, says="Enter a whole number"),
        Page("settings: version 10^30", "POST", settings_page, settings_body(version=str(HUGE)),
             status={200}),
        Page("settings: delay 2^31", "POST", settings_page,
             settings_body(default_preemption_delay=str(TOO_BIG)), status={200}),
        Page("settings: delay 1.5s", "POST", settings_page,
             settings_body(daemonset_preemption_delay="1.5s"), status={200},
             says="whole seconds"),
        Page("settings: delay NUL", "POST", settings_page,
             settings_body(default_preemption_delay="30s\x00"), status={200}),
        Page("settings: delay 10^30 characters", "POST", settings_page,
             settings_body(default_preemption_delay="9" * 100), status={200},
             says="at most 40 characters"),
        Page("settings: deviation 10^30", "POST", settings_page,
             settings_body(deviation_percent=str(HUGE)), status={200},
             says="less than or equal to 1000"),
        Page("settings: max victims 0", "POST", settings_page, settings_body(max_victims="0"),
             status={200}, says="greater than or equal to 1"),
        Page("settings: strategy unknown", "POST", settings_page,
             settings_body(victim_strategy="single,single"), status={200},
             says="Select a valid choice"),
        Page("settings: ask policy NUL", "POST", settings_page,
             settings_body(ask_policy="priority\x00"), status={200},
             says="Select a valid choice"),
        Page("settings: comment NUL", "POST", settings_page, settings_body(comment="a\x00b"),
             status={200}, says="Null characters are not allowed"),
        Page("settings: comment blank", "POST", settings_page, settings_body(comment="  "),
             status={200}, says="comment is required"),
        Page("settings: by an operator", "POST", settings_page, settings_body(miss_percent="5"),
             role="operator", status={403}),
        Page("cancel timer: id 10^30", "POST", f"/timers/{HUGE}/cancel/", role="operator",
             status={404}),
        Page("cancel timer: comment NUL", "POST", f"/timers/{ctx['timer']}/cancel/",
             {"comment": "why\x00"}, role="operator", status={400},
             says="Null characters are not allowed"),
        Page("cancel timer: comment too long", "POST", f"/timers/{ctx['timer']}/cancel/",
             {"comment": "x" * (limits.COMMENT_MAX_LENGTH + 1)}, role="operator", status={400},
             says="at most 2000 characters"),
        Page("cancel timer: next NUL", "GET", f"/timers/{ctx['timer']}/cancel/?next=%00",
             role="operator", status={200}),
        Page("edit: version superscript", "POST", queue, form(version="²"), role="operator",
             status={200}, says="Enter a whole number"),
        Page("edit: version 10^30", "POST", queue, form(version=str(HUGE)), role="operator",
             status={200}),
        Page("edit: version 2^31", "POST", queue, form(version=str(TOO_BIG)), role="operator",
             status={200}),
        Page("edit: delay 2^31", "POST", queue,
             form(**{"prop-0-key": "preemption.delay", "prop-0-value": str(TOO_BIG)}),
             role="operator", status={200}, says="too large"),
        Page("edit: quota delay 596524h", "POST", queue,
             form(**{"prop-0-key": "quota.preemption.delay", "prop-0-value": "596524h"}),
             role="operator", status={200}, says="too large"),
        Page("edit: property key too long", "POST", queue,
             form(**{"prop-0-key": "k" * 300, "prop-0-value": "1"}), role="operator",
             status={200}),
        Page("edit: max 10^30 bytes", "POST", queue, form(**{"res-0-max": str(HUGE)}),
             role="operator", status={200}),
        Page("edit: resource name too long", "POST", queue,
             form(**{"res-0-name": "r" * (limits.RESOURCE_NAME_MAX_LENGTH + 1)}),
             role="operator", status={200}),
        Page("edit: comment NUL", "POST", queue, form(comment="a\x00b"), role="operator",
             status={200}, says="Null characters are not allowed"),
        Page("edit: property value NUL", "POST", queue,
             form(**{"prop-0-key": "a", "prop-0-value": "\x00"}), role="operator",
             status={200}, says="Null characters are not allowed"),
        Page("edit: TOTAL_FORMS superscript", "POST", queue, form(**{"res-TOTAL_FORMS": "²"}),
             role="operator", status={200}),
        Page("edit: TOTAL_FORMS 10^30", "POST", queue,
             form(**{"prop-TOTAL_FORMS": str(HUGE)}), role="operator", status={200}),
        Page("preview: delay 10^30", "POST", queue,
             form(action="preview", **{"prop-0-key": "preemption.delay",
                                       "prop-0-value": str(HUGE)}),
             role="operator", status={200}, says="too large"),
        Page("queue page: path NUL", "GET", f"/partitions/default/queues/{quote(NUL_ROOT)}/",
             status={404}),
        Page("history revision: partition NUL", "GET", "/history/de%00fault/1/", status={404}),
        Page("queue page: page superscript", "GET", f"{queue}?page=²", status={200}),
        Page("revert: version superscript", "POST", revert,
             {"comment": "x", "version": "²"}, status={400}),
        Page("revert: version 10^30", "POST", revert, {"comment": "x", "version": str(HUGE)},
             status={400}),
        Page("revert: comment too long", "POST", revert,
             {"comment": "c" * 3000, "version": str(version)}, status={400}),
        Page("revert: comment NUL", "POST", revert, {"comment": "\x00", "version": "1"},
             status={400}, says="Null characters are not allowed"),
        Page("revert: revision 10^30", "POST", f"/history/default/{HUGE}/revert/",
             {"comment": "x", "version": str(version)}, status={404}),
        Page("history: page superscript", "GET", "/history/?page=²", status={200}),
        Page("diff: numbers superscript and 10^30", "GET",
             f"/history/diff/?partition=default&from=²&to={HUGE}", status={200}),
        Page("runs: page superscript", "GET", "/runs/?page=²", status={200}),
        Page("run: id 10^30", "GET", f"/runs/{HUGE}/", status={404}),
        Page("audit: since superscript", "GET", "/audit/?since=²", status={200}),
        Page("dashboard: search NUL", "GET", "/?q=%00", status={200}, says="No queue path"),
        Page("dashboard: open NUL", "GET", "/?open=%00", status={200}),
        Page("dashboard: children NUL", "GET", "/dashboard/children/?partition=default&queue=%00",
             status={404}),
        Page("dashboard: children partition NUL", "GET",
             "/dashboard/children/?partition=%00&queue=root", status={404}),
        Page("dashboard: children of a long path", "GET",
             f"/dashboard/children/?partition=default&queue={'q' * 5000}", status={404}),
        Page("fences: queue NUL", "GET", "/fences/?partition=default&queue=%00", status={200},
             says="There is no queue"),
        Page("runs: queue NUL", "GET", "/runs/?queue=%00", status={200}),
        Page("audit: actor NUL", "GET", "/audit/?actor=%00", status={200},
             says="Null characters are not allowed"),
        Page("simulator: deviation superscript", "GET",
             "/simulator/?partition=default&policy=ask&ask=x&deviation_percent=²",
             role="viewer", status={200}, says="Enter a whole number"),
        Page("simulator: max_victims 10^30", "GET",
             f"/simulator/?partition=default&policy=ask&ask=x&max_victims={HUGE}",
             role="viewer", status={200}),
        Page("simulator: max 10^30", "GET",
             f"/simulator/?partition=default&policy=quota&queue={NIGHTLY}&max-TOTAL_FORMS=1"
             f"&max-INITIAL_FORMS=0&max-0-name=memory&max-0-max={HUGE}",
             role="viewer", status={200}),
        Page("simulator: partition NUL", "GET", "/simulator/?partition=%00", status={404}),
        Page("simulator: queue NUL", "GET",
             f"/simulator/?partition=default&policy=quota&queue={NIGHTLY}%00", role="viewer",
             status={200}, says="Select a valid choice"),
        Page("login: username NUL", "POST", "/accounts/login/",
             {"username": "\x00", "password": "x"}, status={200}),
        Page("admin: search NUL", "GET", "/admin/auth/user/?q=%00", status={400}),
        Page("session cookie NUL", "GET", "/", status={400}, cookie="a\x00b"),
        *[
            Page(f"import: {label}", "POST", imports,
                 {"text": text, "comment": "malformed", "action": "save"}, status={400},
                 says=says)
            for label, text, says in [
                # Properties are text, as YuniKorn reads them: YAML's own types apply elsewhere.
                ("invalid timestamp", yaml_with("maxapplications: 2001-13-45"), "line 7"),
                ("5000-digit integer", yaml_with(f"maxapplications: {'9' * 5000}"),
                 "4300 digits"),
                ("!!int garbage", yaml_with("properties: {a: !!int garbage}"), "line 7"),
                ("deep nesting", "partitions: " + "[" * 50_000 + "]" * 50_000, "nested deeper"),
                ("NUL escape in a property", yaml_with('properties: {a: "x\\0"}'), "NUL"),
                # libyaml, as YuniKorn's Go YAML, refuses an escaped surrogate while parsing.
                ("surrogate in a kept key", yaml_with('adminacl: "\\ud800"'),
                 "invalid Unicode character escape"),
                ("delay 2^31", yaml_with(f"properties: {{preemption.delay: {TOO_BIG}}}"),
                 "too large"),
                ("seed quota delay 10^30",
                 yaml_with(f"resources: {{quota.preemption.delay: {HUGE}}}"), "too large"),
                ("infinite kept number", yaml_with("maxapplications: .inf"), "JSON"),
                ("over the config cap",
                 yaml_with("properties: {a: b}") + "#" * (5 * 1024 * 1024), "CONFIG_MAX_BYTES"),
            ]
        ],
        Page("import: uploaded bad timestamp", "POST", imports,
             {"file": SimpleUploadedFile("q.yaml", yaml_with("maxapplications: 2001-13-45")
                                         .encode()), "comment": "x", "action": "save"},
             status={400}, says="line 7"),
        Page("import: uploaded file over the cap", "POST", imports,
             {"file": SimpleUploadedFile("q.yaml", b"#" * (5 * 1024 * 1024 + 1)),
              "comment": "x", "action": "save"}, status={400}, says="limit"),
        Page("import: comment NUL", "POST", imports,
             {"text": yaml_with("properties: {a: b}"), "comment": "\x00"}, status={400},
             says="Null characters are not allowed"),
        Page("too many form fields", "POST", revert,
             {f"f{i}": "1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)},
             status={400}),
    ]  # fmt: skip


def test_console_forms_and_pages_refuse_malformed_input(ctx):
    clients: dict[str, Client] = {}
    failures: list[str] = []
    cases = pages(ctx)
    for case in cases:
        if case.role not in clients:
            clients[case.role] = signed_in_client(case.role)
        client = clients[case.role]
        before = snapshot()
        headers = {} if case.cookie is None else {"HTTP_COOKIE": f"sessionid={case.cookie}"}
        try:
            if case.method == "GET":
                response = client.get(case.url, **headers)
            else:
                response = client.post(case.url, case.data)
        except Exception as exc:  # a crash in the view is a 500 the user would have seen
            failures.append(f"{case.label}: raised {exc!r}"[:400])
            continue
        text = response.content.decode(errors="replace")
        if response.status_code not in case.status:
            failures.append(f"{case.label}: status {response.status_code}: {text[:200]!r}")
        elif case.says and case.says not in text:
            failures.append(f"{case.label}: the answer does not say {case.says!r}")
        elif snapshot() != before:
            failures.append(f"{case.label}: the database changed")
    assert len(cases) >= 40
    assert not failures, f"{len(failures)} of {len(cases)} failed:\n" + "\n".join(failures)
