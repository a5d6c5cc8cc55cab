"""Finding one's way in the API: the schema and docs need sign-in like everything else, every
operation is summarised, the root at ``/api/v1/`` lists the resources, the docs link back to
the console; and the lists page (the queue list too), diffs give exact quantities."""

from __future__ import annotations

import urllib.parse

import pytest
from django.test import Client

from scheduler_admin.queues.models import Queue
from tests.api.conftest import assert_error, client_for, role_client
from tests.support.console import signed_in_client

pytestmark = pytest.mark.django_db

PAGE = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # a browser's Accept
API = "/api/v1/partitions/default"
DOCS = ("/api/schema/", "/api/docs/", "/api/v1/")


@pytest.mark.parametrize("url", DOCS)
def test_the_schema_docs_and_root_need_a_signed_in_user_with_a_role(db, url):
    browser = Client().get(url, HTTP_ACCEPT=PAGE)
    assert browser.status_code == 302
    assert browser["Location"] == f"/accounts/login/?next={urllib.parse.quote(url)}"
    for accept in ("application/json", "*/*", "application/vnd.oai.openapi"):
        body = assert_error(Client().get(url, HTTP_ACCEPT=accept), 401)
        assert body["code"] == "not_authenticated"
    assert_error(client_for(None).get(url, HTTP_ACCEPT="application/json"), 403)
    bad_token = Client().get(url, HTTP_AUTHORIZATION="Token nope", HTTP_ACCEPT=PAGE)
    assert_error(bad_token, 401)


@pytest.mark.parametrize("url", DOCS)
def test_the_schema_docs_and_root_answer_a_session_or_a_token(db, url):
    assert signed_in_client("viewer").get(url, HTTP_ACCEPT=PAGE).status_code == 200
    assert role_client("viewer").get(url).status_code == 200


def test_the_docs_link_back_to_the_console(db):
    page = signed_in_client("viewer").get("/api/docs/", HTTP_ACCEPT=PAGE).content.decode()
    assert '<a href="/">&larr; Back to the console</a>' in page
    assert 'href="/api/v1/"' in page
    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "[Back to the console](/)" in schema["info"]["description"]


def test_every_operation_has_a_summary_and_a_documented_success(db):
    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    missing = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            success = [code for code in operation["responses"] if code.startswith("2")]
            if not operation.get("summary") or not success:
                missing.append(f"{method.upper()} {path}")
            for code in success:
                content = operation["responses"][code].get("content", {})
                for media in content.values():  # never an untyped "object"
                    assert media["schema"] != {"type": "object"}, (method, path, code)
    assert not missing, missing


def test_the_root_links_every_resource_and_each_link_answers(live):
    viewer = role_client("viewer")
    root = viewer.get("/api/v1/").json()
    assert root["console"] == "http://testserver/"
    assert {"partitions", "runs", "audit", "schema", "docs", "token"} <= set(root)
    [default] = root["by_partition"]
    assert default["name"] == "default"
    assert {"queues", "config", "revisions", "timers", "evictions", "cluster_state",
            "simulate"} <= set(default)  # fmt: skip
    assert default["queues"] == f"http://testserver{API}/queues/"
    assert default["cluster_state"] == f"http://testserver{API}/cluster-state"
    links = [root[key] for key in root if key not in {"by_partition", "token"}]
    links += [url for key, url in default.items() if key != "name"]
    writes_only = {"cluster_state", "simulate", "config_validate"}
    for url in links:
        if any(url == default[key] for key in writes_only):
            continue
        path = url.removeprefix("http://testserver")
        client = signed_in_client("viewer") if path == "/" else viewer
        assert client.get(path).status_code == 200, url


# --- pagination and diffs ------------------------------------------------------------------------


def test_the_queue_list_is_paginated_in_path_order_and_keeps_its_filter(live):
    viewer = role_client("viewer")
    paths = sorted(Queue.objects.values_list("path", flat=True))
    first = viewer.get(f"{API}/queues/?page_size=2").json()
    assert first["count"] == len(paths) == 4 and first["previous"] is None
    assert [row["path"] for row in first["results"]] == paths[:2]
    second = viewer.get(first["next"]).json()
    assert [row["path"] for row in second["results"]] == paths[2:]
    assert second["next"] is None
    under = viewer.get(f"{API}/queues/?under=root.team&page_size=1&page=3").json()
    assert under["count"] == 3 and [r["path"] for r in under["results"]] == ["root.team.b"]
    assert_error(viewer.get(f"{API}/queues/?page=9"), 404)
    assert_error(viewer.get(f"{API}/queues/?page=x"), 400, "page")


def test_revision_diffs_and_validate_changes_give_exact_quantities(live):
    admin = role_client("admin")
    config = admin.get(f"{API}/config").json()
    config["partition"]["default_preemption_delay"] = "2m"
    team = next(q for q in config["queues"] if q["path"] == "root.team")
    team["max"] = {"memory": "90G", "vcore": "1500m"}
    checked = admin.post(f"{API}/config/validate", config, format="json").json()
    expected = [
        {"queue": None, "field": "default_preemption_delay", "old": "30s", "new": "2m"},
        {"queue": "root.team", "field": "max.memory", "old": "100G", "new": "90G"},
        {"queue": "root.team", "field": "max.vcore", "old": None, "new": "1500m"},
    ]
    assert checked["changes"] == expected
    saved = admin.put(f"{API}/config", {**config, "comment": "c"}, format="json")
    assert saved.status_code == 200, saved.content
    number = admin.get(f"{API}/revisions/?page_size=1").json()["results"][0]["number"]
    assert admin.get(f"{API}/revisions/{number}/").json()["diff"] == expected
    lowered = admin.get(f"{API}/revisions/2/?against=1").json()["diff"]
    assert lowered == [{"queue": "root.team", "field": "max.memory", "old": "400G", "new": "100G"}]


def test_the_schema_cites_no_internal_reference(db):
    """The API documentation is read by people who have no spec, seed or issue tracker to look
    things up in: descriptions (serializer docstrings included) say it in words."""
    from tests.unit.test_docs_site import INTERNAL

    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").content
    found = sorted(set(INTERNAL.findall(schema.decode())))
    assert not found, found
