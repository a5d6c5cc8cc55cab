"""The ``python -m preemption.scenario`` contract of SCENARIOS.md: output lines and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PASSING = """
name: runner-passing
policy: quota
now: "2026-01-01T12:00:00Z"
partition: {quota_preemption_enabled: true}
queues:
  - name: q
    resources: {max: {memory: 100G}}
    properties: {quota.preemption.delay: 30s}
nodes:
  - {name: n1, capacity: {memory: 200G}}
allocations:
  - {id: a1, queue: root.q, node: n1, resources: {memory: 60G}, created_at: "2026-01-01T10:00:00Z"}
  - {id: a2, queue: root.q, node: n1, resources: {memory: 60G}, created_at: "2026-01-01T11:00:00Z"}
action:
  quota: {queue: root.q, max: {memory: 70G}}
expect:
  victims: [a2]
  outcome: complete
  targets: {root.q: {memory: 50000000000}}
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "preemption.scenario", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_passing_file_prints_its_json_line_and_the_summary(tmp_path: Path) -> None:
    result = run(str(write(tmp_path, "ok.yaml", PASSING)))
    assert result.returncode == 0, result.stderr
    first, last = result.stdout.strip().splitlines()
    line = json.loads(first)
    assert set(line) == {"name", "file", "passed", "plan", "mismatches"}
    assert line["name"] == "runner-passing" and line["passed"] is True
    assert set(line["plan"]) >= {
        "victims", "outcome", "node", "nominations", "targets", "freed", "explanations",
    }  # fmt: skip
    assert line["plan"]["targets"] == {"root.q": {"memory": 50_000_000_000}}
    assert last == "1 passed, 0 failed"


def test_a_failing_expectation_exits_1_and_lists_the_mismatch(tmp_path: Path) -> None:
    wrong = PASSING.replace("victims: [a2]", "victims: [a1]")
    result = run(str(write(tmp_path, "wrong.yaml", wrong)))
    assert result.returncode == 1
    line = json.loads(result.stdout.splitlines()[0])
    assert line["passed"] is False
    assert line["mismatches"] == ["victims: expected ['a1'], got ['a2']"]
    assert result.stdout.strip().endswith("0 passed, 1 failed")


def test_json_only_drops_the_summary_and_folders_are_expanded(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", PASSING)
    write(tmp_path, "b.yaml", PASSING.replace("runner-passing", "runner-second"))
    result = run("--json-only", str(tmp_path))
    assert result.returncode == 0
    names = [json.loads(line)["name"] for line in result.stdout.splitlines()]
    assert names == ["runner-passing", "runner-second"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (("policy: quota", "policy: quotas"), "policy"),
        (
            ("memory: 60G}, created_at", "memory: -60G}, created_at"),
            "allocations[0].resources.memory",
        ),
        (("queue: root.q, node: n1", "queue: root.nope, node: n1"), "allocations[0].queue"),
        (
            ("node: n1, resources: {memory: 60G}", "node: n9, resources: {memory: 60G}"),
            "allocations[0].node",
        ),
        (('now: "2026-01-01T12:00:00Z"', "now: yesterday"), "now"),
        (("expect:", "surprise: 1\nexpect:"), "surprise"),
        (
            ("quota.preemption.delay: 30s", "quota.preemption.delay: soon"),
            "queues[root.q].properties",
        ),
        (("outcome: complete", "outcome: great"), "expect.outcome"),
    ],
)
def test_an_invalid_file_exits_2_naming_the_file_and_field(
    tmp_path: Path, change: tuple[str, str], field: str
) -> None:
    bad = write(tmp_path, "bad.yaml", PASSING.replace(*change))
    assert PASSING.replace(*change) != PASSING
    result = run(str(bad))
    assert result.returncode == 2
    assert f"{bad}: {field}" in result.stderr


def test_an_unreadable_file_exits_2_and_the_others_still_run(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", PASSING)
    result = run(str(good), str(tmp_path / "missing.yaml"))
    assert result.returncode == 2
    assert "missing.yaml: cannot be read" in result.stderr
    assert result.stdout.strip().endswith("1 passed, 0 failed")
