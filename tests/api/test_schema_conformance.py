"""Schemathesis over the live OpenAPI schema, with every check, as the four kinds of caller:
admin, operator, viewer and a tenant admin (no global role, admin of one subtree through a queue
grant). The schema must say what the server does: no 5xx, every response as documented (status,
content type, headers, body), schema-valid requests accepted, schema-violating ones refused,
unsupported methods answered 405 with ``Allow``, authentication not ignored, ...

A bounded, deterministic version of the full run (``tests/support/fuzz_api.py``, which runs
every phase against gunicorn): the seed is fixed, each operation gets a few generated requests
(``SCHEMA_EXAMPLES``, default 3) in the fuzzing phase (the examples, coverage and stateful
phases, which take minutes, run in the full run only). The rules the schema cannot state (what
depends on stored data or on a whole configuration) are listed, with their reasons, in
``schemathesis.toml``, which this test reads as the CLI does. Every failure of every role is
reported together.

More than 20 s because it is four runs over the whole schema (54 operations) through a real
server, one request at a time so that the run is the same every time: about 55 s on a busy
two-core machine (load 8), half that on an idle one.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axes.models import AccessAttempt

#: Examples per operation in the fuzzing phase (``SCHEMA_EXAMPLES=100`` for a deeper local run).
EXAMPLES = int(os.environ.get("SCHEMA_EXAMPLES", "3"))
CONFIG = Path(__file__).resolve().parents[2] / "schemathesis.toml"
#: The admin last: its writes (a revoked grant, a replaced config) change what others may do.
ROLES = ("viewer", "tenant", "operator", "admin")

# Kept for the other schema tests: the checks of a single validated response.
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def bounded_config(headers: dict[str, str], *, seed: int = 1, examples: int = EXAMPLES) -> Any:
    """``schemathesis.toml`` plus the bounds of this run: seed, examples, phases, all checks."""
    from schemathesis.config import SchemathesisConfig

    settings = f"""
seed = {seed}
workers = 1
[generation]
max-examples = {examples}
deterministic = true
[phases.examples]
enabled = false
[phases.coverage]
enabled = false
[phases.fuzzing]
enabled = true
[phases.stateful]
enabled = false
[checks]
enabled = true
[headers]
Authorization = "{headers["Authorization"]}"
"""
    return SchemathesisConfig.from_str(settings + CONFIG.read_text())


def run_schemathesis(config: Any, base_url: str) -> tuple[list[str], Counter[int]]:
    """Every failed check and engine error of one run, described, and how often each status
    was answered (so a run that was refused everything does not pass unnoticed)."""
    import schemathesis
    from schemathesis.engine import Status, events
    from schemathesis.engine import from_schema as engine_for

    schema = schemathesis.openapi.from_url(f"{base_url}/api/schema/", config=config)
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for event in engine_for(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            statuses.update(
                interaction.response.status_code
                for interaction in event.recorder.interactions.values()
                if interaction.response is not None
            )
        if isinstance(event, events.ScenarioFinished) and event.status == Status.FAILURE:
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.status != Status.FAILURE:
                        continue
                    interaction = event.recorder.interactions.get(case_id)
                    request = interaction.request if interaction else None
                    status = interaction.response.status_code if interaction else "?"
                    where = f"{request.method} {request.uri}" if request else case_id
                    info = check.failure_info.failure if check.failure_info else ""
                    failures.append(f"{event.recorder.label}: {check.name}: {where} -> {status}\n"
                                    f"    {str(getattr(info, 'title', info))[:300]}")  # fmt: skip
        elif isinstance(event, events.NonFatalError | events.FatalError):
            failures.append(f"engine error: {getattr(event, 'value', None) or event.exception}")
    return failures, statuses


@pytest.fixture
def callers(transactional_db) -> dict[str, dict[str, str]]:
    """The tenants' state (timers, runs, an eviction order, inside and outside a subtree) and
    an API token per role; the tenant admin holds admin on root.team-a through their group.
    Committed (``transactional_db``): the server below is another process."""
    from scheduler_admin.accounts.tokens import create_token
    from tests.support import tenants

    tenants.tenant_state()
    kinds = {"admin": "admin", "operator": "operator", "viewer": "viewer", "tenant": "sub_admin"}
    headers = {}
    for role, kind in kinds.items():
        key = create_token(tenants.tenant_user(kind), name="schema", expires_at=None)[1]
        headers[role] = {"Authorization": f"Token {key}"}
    return headers


@pytest.fixture
def server(callers: dict[str, dict[str, str]], tmp_path: Path) -> Iterator[str]:
    """gunicorn (two workers) on the test database, write throttles out of the way (a
    throttled write is a documented 429, but it would hide what comes after it)."""
    import urllib.request

    from tests.support.processes import (
        ManagedProcess,
        free_port,
        test_database_env,
        venv_executable,
        wait_until,
    )

    port = free_port()
    args = [venv_executable("gunicorn"), "scheduler_admin.wsgi", "-b", f"127.0.0.1:{port}",
            "-w", "2", "--timeout", "120"]  # fmt: skip
    rates = {"API_WRITE_RATE": "1000000/min", "API_AGENT_WRITE_RATE": "1000000/min",
             "API_TOKEN_RATE": "1000000/min"}  # fmt: skip
    env = test_database_env({**rates, "XDG_RUNTIME_DIR": str(tmp_path)})

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return True
        except OSError:
            return False

    with ManagedProcess("schema-web", args, env=env, log_dir=tmp_path) as process:
        wait_until(answers, 60, message="gunicorn never answered", watch=[process])
        yield f"http://127.0.0.1:{port}"


def test_every_operation_answers_as_its_schema_says_for_every_kind_of_caller(callers, server):
    """Slow (one to three minutes): schemathesis generates examples for every operation of the
    served schema, for each kind of caller."""
    failures: list[str] = []
    for role in os.environ.get("SCHEMA_ROLES", ",".join(ROLES)).split(","):
        AccessAttempt.objects.all().delete()  # a role's wrong passwords must not lock out the next
        found, statuses = run_schemathesis(bounded_config(callers[role]), server)
        failures += [f"[{role}] {failure}" for failure in found]
        answered = sum(count for status, count in statuses.items() if status < 300)
        if answered < 20:  # the requests reached the operations, not only the refusals
            failures.append(f"[{role}] only {answered} successful answers: {dict(statuses)}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures)
