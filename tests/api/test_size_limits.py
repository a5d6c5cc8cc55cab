"""Request size limits: settings, consistent with each other, answered with the API's error body.

- ``REQUEST_MAX_BYTES`` (default 32 MiB) caps every body: over it, 413 before the body is read.
  Django's own cap (``DATA_UPLOAD_MAX_MEMORY_SIZE``) is the same value, so its HTML 400 never
  answers first; a body between Django's old 2.5 MiB and the caps goes through.
- ``CONFIG_MAX_BYTES`` (default 5 MiB) caps a config, YAML or JSON: over it, 413 naming it.
- ``REQUEST_MAX_FIELDS`` caps the fields of a form or query string: over it, 400.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

from scheduler_admin.cluster.models import Allocation
from scheduler_admin.queues.models import ConfigRevision
from tests.api.conftest import assert_error
from tests.api.test_malformed_input import api_client, snapshot, yaml_with

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
MIB = 1024 * 1024


@pytest.fixture
def demo(demo_partition):
    return demo_partition


def test_the_defaults_fit_a_50000_allocation_push_and_agree_with_django():
    assert settings.REQUEST_MAX_BYTES == 32 * MIB
    assert settings.CONFIG_MAX_BYTES == 5 * MIB
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == settings.REQUEST_MAX_BYTES
    assert settings.DATA_UPLOAD_MAX_NUMBER_FIELDS == 1000


def test_a_body_over_the_request_cap_is_413_with_the_error_body(demo):
    operator = api_client("operator")
    before = snapshot()
    body = b'{"nodes": [' + b" " * settings.REQUEST_MAX_BYTES + b"]}"
    response = operator.generic(
        "POST", f"{API}/cluster-state", body, content_type="application/json"
    )
    error = assert_error(response, 413, "body")
    assert error["code"] == "too_large"
    assert "REQUEST_MAX_BYTES" in error["errors"]["body"][0]
    assert snapshot() == before


def test_the_request_cap_is_a_setting(demo, settings):
    settings.REQUEST_MAX_BYTES = 100_000
    response = api_client("admin").patch(f"{API}/", {"comment": "x" * 200_000}, format="json")
    assert_error(response, 413, "body")
    # the console gets a plain 413 too, never Django's HTML 400
    client = Client()
    response = client.post("/accounts/login/", {"username": "u" * 200_000, "password": "x"})
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/plain")


def _padded_yaml(size: int) -> bytes:
    text = yaml_with("properties: {a: b}").encode()
    return text + b"#" * (size - len(text)) + b"\n"


def test_a_yaml_config_between_django_default_and_the_config_cap_is_accepted(demo):
    """3 MiB: over Django's default 2.5 MiB (once an HTML 400), under CONFIG_MAX_BYTES."""
    admin = api_client("admin")
    version = admin.get(f"{API}/").json()["version"]
    response = admin.generic(
        "PUT", f"{API}/config.yaml?version={version}&comment=big", _padded_yaml(3 * MIB),
        content_type="application/yaml",
    )  # fmt: skip
    assert response.status_code == 200, response.content[:300]
    assert ConfigRevision.objects.filter(comment="big").exists()


def test_a_config_over_the_config_cap_is_413_naming_it_yaml_and_json(demo):
    admin, viewer = api_client("admin"), api_client("viewer")
    before = snapshot()
    size = settings.CONFIG_MAX_BYTES + 1
    response = admin.generic(
        "PUT", f"{API}/config.yaml?version=1&comment=x", _padded_yaml(size),
        content_type="application/yaml",
    )  # fmt: skip
    error = assert_error(response, 413, "body")
    assert "CONFIG_MAX_BYTES" in error["errors"]["body"][0] and error["code"] == "too_large"

    config = admin.get(f"{API}/config").json()
    config["comment"] = "x" * size
    for method, url, client in (
        ("PUT", f"{API}/config", admin),
        ("POST", f"{API}/config/validate", viewer),
    ):
        response = client.generic(method, url, json.dumps(config), content_type="application/json")
        error = assert_error(response, 413, "body")
        assert "CONFIG_MAX_BYTES" in error["errors"]["body"][0]
    assert snapshot() == before


def test_a_json_config_between_django_default_and_the_config_cap_is_read(demo):
    """A 3 MiB JSON config reaches validation (here: its comment is too long for the column)."""
    admin = api_client("admin")
    config = admin.get(f"{API}/config").json()
    config["comment"] = "x" * (3 * MIB)
    response = admin.generic(
        "PUT", f"{API}/config", json.dumps(config), content_type="application/json"
    )
    assert_error(response, 400, "comment")


def test_a_large_cluster_state_push_fits(demo):
    """15,000 allocations with 253-character ids: about 9 MB, far over Django's 2.5 MiB."""
    long_id = "a" * 240
    body = {
        "nodes": [{"name": "n1", "capacity": {"memory": "100Ti", "vcore": "100000"}}],
        "allocations": [
            {"id": f"{long_id}-{i:012d}", "app": f"{long_id}-{i:012d}", "queue": "root.prod.web",
             "node": "n1", "resources": {"memory": "1Mi", "vcore": "1m"}}
            for i in range(15_000)
        ],
    }  # fmt: skip
    raw = json.dumps(body)
    assert len(raw) > 8 * MIB
    response = api_client("operator").generic(
        "POST", f"{API}/cluster-state", raw, content_type="application/json"
    )
    assert response.status_code == 200, response.content[:300]
    assert Allocation.objects.count() == 15_000


def test_too_many_form_fields_is_400_on_the_api_and_the_console(demo):
    fields = {f"f{i}": "1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}
    response = api_client("admin").post(f"{API}/revisions/1/revert", fields)
    assert_error(response, 400, "request")
    assert Client().post("/accounts/login/", fields).status_code == 400


def test_settings_refuse_a_config_cap_above_the_request_cap():
    env = {
        **os.environ,
        "SCHEDULER_ENV": "test",
        "REQUEST_MAX_BYTES": "100000",
        "CONFIG_MAX_BYTES": "200000",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import scheduler_admin.settings"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "CONFIG_MAX_BYTES must not be above REQUEST_MAX_BYTES" in result.stderr
