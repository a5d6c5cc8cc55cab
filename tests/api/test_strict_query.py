"""Strict previews and strict query strings on every write (SPEC 7, changed 2026-11-29).

``PATCH .../queues/{path}/?dry_run=maybe`` (and ``?dryrun=true``, ``?dry_run=on``, Kubernetes'
``?dryRun=All``) once saved for real: a preview became a quota decrease whose run evicted tasks.
Now every write operation of the served schema answers a misspelt or unknown query parameter,
or a ``dry_run``/``dryRun`` value that is neither a preview nor a save, with 400 naming the
parameter, and changes nothing: configuration, revisions, queue versions, audit rows, timers,
runs, eviction orders, grants, tokens, agents, cluster rows (``everything``).

The operations come from the schema itself (``write_operations``), so a new write is covered
the moment it is documented; the bodies are the valid requests of ``test_unknown_fields`` (each
would change something if it were accepted), so the 400 is due to the query string alone.
"""

from __future__ import annotations

import json

import pytest
import yaml
from rest_framework.test import APIClient

from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from tests.api.conftest import assert_error, role_client
from tests.api.test_unknown_fields import everything, write_operations, writes
from tests.support.team import GB, team_config

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"

#: Query strings no write may act on, with the parameter the 400 must name.
MISSPELT = [
    ("dryrun=true", "dryrun"),
    ("dry-run=true", "dry-run"),
    ("dryRun=true", "dryRun"),
    ("dryRun=all", "dryRun"),
    ("dryRun=", "dryRun"),
    ("DRY_RUN=true", "DRY_RUN"),
    ("dry_run=maybe", "dry_run"),
    ("dry_run=on", "dry_run"),
    ("dry_run=yes", "dry_run"),
    ("dry_run=", "dry_run"),
    ("dry_run=2", "dry_run"),
    ("dry_run=%20true", "dry_run"),
    ("dry_run=true&dry_run=true", "dry_run"),
    ("dry_run=false&dryRun=All", "dryRun"),
    ("preview=true", "preview"),
    ("bogus=1", "bogus"),
]
#: Spellings that preview (and save nothing) on the operations that declare a dry run.
PREVIEWS = [
    "dry_run=true",
    "dry_run=TRUE",
    "dry_run=True",
    "dry_run=1",
    "dryRun=All",
    "dry_run=true&dryRun=All",
]


def _send(method: str, path: str, write, query: str, admin: APIClient):
    client = APIClient() if "auth/token" in path else admin
    url = path.format(**write.path) + "?" + query
    body = write.body if isinstance(write.body, str) else _json(write.body)
    return client.generic(method.upper(), url, body, content_type=write.content_type)


def _json(body: object) -> str:
    return json.dumps(body)


def test_every_write_refuses_a_misspelt_or_unknown_query_parameter_and_changes_nothing(live):
    operations = write_operations()
    table = writes(live)
    admin = role_client("admin")  # one token: a client per request would add tokens
    assert {(path, method) for path, method, _ in operations} == set(table)
    assert len(operations) >= 19
    failures = []
    for path, method, _ in operations:
        write = table[(path, method)]
        for query, named in MISSPELT:
            before = everything()
            response = _send(method, path, write, query, admin)
            label = f"{method.upper()} {path}?{query}"
            if response.status_code != 400:
                failures.append(f"{label}: {response.status_code} {response.content[:200]!r}")
            elif named not in response.json()["errors"]:
                failures.append(f"{label}: 400 without naming {named}: {response.json()}")
            if everything() != before:
                failures.append(f"{label}: the database changed")
    assert not failures, "\n".join(failures)


def test_the_valid_requests_of_the_corpus_do_change_something(live):
    """The control: without the bad query parameter, the corpus' queue PATCH saves (so the 400s
    above come from the query string, not from the bodies)."""
    write = writes(live)[("/api/v1/partitions/{partition}/queues/{path}/", "patch")]
    revisions = ConfigRevision.objects.count()
    path = "/api/v1/partitions/{partition}/queues/{path}/"
    response = _send("patch", path, write, "", role_client("admin"))
    assert response.status_code == 200, response.content
    assert ConfigRevision.objects.count() == revisions + 1


def test_every_accepted_spelling_previews_and_saves_nothing(live):
    dry_runs = [(path, method) for path, method, dry in write_operations() if dry]
    assert len(dry_runs) == 3  # queue PATCH, config PUT, config.yaml PUT
    table = writes(live)
    admin = role_client("admin")
    failures = []
    for path, method in dry_runs:
        for query in PREVIEWS:
            before = everything()
            response = _send(method, path, table[(path, method)], query, admin)
            label = f"{method.upper()} {path}?{query}"
            if response.status_code != 200 or response.json().get("dry_run") is not True:
                failures.append(f"{label}: {response.status_code} {response.content[:200]!r}")
            if everything() != before:
                failures.append(f"{label}: the database changed")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("query", ["dry_run=false", "dry_run=0", "dry_run=FALSE", ""])
def test_false_or_no_dry_run_saves(live, query):
    operator = role_client("operator")
    version = Queue.objects.get(path="root.team.b").version
    body = {"max": {"memory": "5G"}, "version": version, "comment": "c"}
    response = operator.patch(f"{API}/queues/root.team.b/?{query}", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["version"] == version + 1
    assert Queue.objects.get(path="root.team.b").max == {"memory": 5 * GB}


def test_the_issues_requests_are_refused_and_name_the_parameter(live):
    """The four previews of the report that saved a quota decrease."""
    operator = role_client("operator")
    version = Queue.objects.get(path="root.team.b").version
    body = {"max": {"memory": "5G"}, "version": version, "comment": "c"}
    expected = {
        "dry_run=maybe": ("dry_run", "must be true or false (also 1 or 0, in any letter case)"),
        "dryrun=true": ("dryrun", "did you mean 'dry_run'?"),
        "dry_run=on": ("dry_run", "must be true or false"),
        "dryRun=true": ("dryRun", "must be All"),
    }
    for query, (name, says) in expected.items():
        response = operator.patch(f"{API}/queues/root.team.b/?{query}", body, format="json")
        errors = assert_error(response, 400, name)["errors"]
        assert says in errors[name][0], errors
    assert Queue.objects.get(path="root.team.b").version == version
    assert Queue.objects.get(path="root.team.b").max == {"memory": 10 * GB}


def test_kubernetes_dry_run_all_previews_the_queue_change(live):
    operator = role_client("operator")
    version = Queue.objects.get(path="root.team.b").version
    body = {"max": {"memory": "5G"}, "version": version, "comment": "c"}
    response = operator.patch(f"{API}/queues/root.team.b/?dryRun=All", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["dry_run"] is True and response.json()["timers"]
    assert Queue.objects.get(path="root.team.b").version == version


def test_a_dry_run_of_a_new_partitions_yaml_creates_nothing(live):
    """``PUT config.yaml`` creates a partition that does not exist yet; its dry run used to
    create it all the same."""
    document = yaml.safe_load(team_config("2s"))
    document["partitions"][0]["name"] = "other"
    admin = role_client("admin")
    url = "/api/v1/partitions/other/config.yaml?dry_run=true"
    response = admin.put(url, yaml.safe_dump(document), content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert response.json()["dry_run"] is True and response.json()["valid"] is True
    assert not Partition.objects.filter(name="other").exists()


def test_the_schema_states_the_rule_in_words_on_every_dry_run_operation(live):
    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path, method, dry in write_operations():
        if not dry:
            continue
        operation = schema["paths"][path][method]
        assert "misspelt preview never saves" in operation["description"], (path, method)
        names = {parameter["name"] for parameter in operation["parameters"]}
        assert {"dry_run", "dryRun"} <= names


def test_every_operation_of_the_schema_is_in_the_query_contract(live):
    """The server reads its query rules from the schema: every documented operation has them,
    so none escapes the check."""
    from scheduler_admin.base.api.query import contract  # new with the strict query string

    schema = role_client("viewer").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    documented = {
        (path, method.upper())
        for path, operations in schema["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert {(op.path, op.method) for op in contract().values()} == documented
