"""``python -m preemption.scenario FILE...``: evaluate scenario files with the engine alone.

The format and output contract are in SCENARIOS.md. Each file pins one decision (or, for
``quota_timeline``, a sequence of timer decisions) to an expected result. Files and folders may be
given (folders: every ``*.yaml`` / ``*.yml`` below them). One JSON line is printed per scenario,
then ``N passed, M failed``. Exit status: 0 all passed, 1 some failed, 2 a file could not be read
or is invalid (the message names the file and the field; the other files are still evaluated).

A scenario's queues are parsed strictly (keys, names, quantities, property values) but the
admin-console rules between queues (guaranteed <= max, children within the parent, ...) are not
applied: the engine must decide on whatever state the cluster is in, including quotas that were
lowered below usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from preemption import policies, resources, timers
from preemption.config import ASK_POLICIES, ROOT, PartitionConfig, PartitionSettings
from preemption.durations import DurationError, parse_duration
from preemption.hierarchy import property_errors
from preemption.model import (
    DEFAULT_CREATED_AT,
    Allocation,
    AllocationState,
    Ask,
    AskState,
    Budget,
    ClusterState,
    ConfigChange,
    Node,
    Options,
    Outcome,
    Plan,
    PreemptionPolicy,
    QoS,
    Reason,
    TimelineRun,
)
from preemption.yunikorn import parse_queue_tree

POLICIES = ("quota", "inter_queue", "required_node", "priority", "job", "quota_timeline")
TOP_KEYS = {
    "name", "description", "policy", "now", "partition", "running_runs", "queues", "nodes",
    "allocations", "asks", "budgets", "action", "options", "expect", "timeline", "until",
}  # fmt: skip
PARTITION_KEYS = {
    "quota_preemption_enabled", "miss_percent", "default_preemption_delay",
    "daemonset_preemption_delay", "ask_policy", "preemption_enabled",
}  # fmt: skip
NODE_KEYS = {"name", "capacity", "schedulable"}
ALLOCATION_KEYS = {
    "id", "queue", "app", "node", "resources", "priority", "allow_preemption", "originator",
    "required_node", "job", "qos", "pdb", "created_at", "state",
}  # fmt: skip
ASK_KEYS = {
    "id", "queue", "app", "resources", "priority", "allow_preemption", "preemption_policy",
    "required_node", "job", "created_at", "state", "node",
}  # fmt: skip
BUDGET_KEYS = {"name", "allowed_disruptions"}
OPTION_KEYS = {"victim_strategy", "deviation_percent", "max_victims", "soft_eviction"}
EXPECT_KEYS = {"victims", "outcome", "node", "nominations", "targets", "explanations", "runs"}
SET_KEYS = {"queue", "max", "guaranteed", "properties", "partition"}
STRATEGIES = ("single", "multiple")


class ScenarioError(ValueError):
    """A scenario file that cannot be read or is invalid; names the file and the field."""

    def __init__(self, file: str, field: str, message: str) -> None:
        super().__init__(f"{file}: {field}: {message}" if field else f"{file}: {message}")
        self.file, self.field, self.message = file, field, message


@dataclass(frozen=True)
class Expect:
    victims: frozenset[str] | None = None
    outcome: Outcome | None = None
    node: str | None = None
    has_node: bool = False
    nominations: Mapping[str, str] | None = None
    targets: Mapping[str, Mapping[str, int]] | None = None
    explanations: Mapping[str, Reason] | None = None
    runs: tuple[dict[str, Any], ...] | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    file: str
    policy: str
    now: datetime
    state: ClusterState
    action: tuple[str, Any] | None
    options: Options
    expect: Expect
    timeline: tuple[ConfigChange, ...] = ()
    until: datetime | None = None


@dataclass
class Result:
    scenario: Scenario
    plan: dict[str, Any]
    mismatches: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.scenario.name,
            "file": self.scenario.file,
            "passed": self.passed,
            "plan": self.plan,
            "mismatches": self.mismatches,
        }


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


class _Reader:
    """Typed access to one file's values; every error names the file and the field."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, where: str, message: str) -> ScenarioError:
        return ScenarioError(self.file, where, message)

    def mapping(self, value: object, where: str, keys: set[str]) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(where, "must be a mapping")
        for key in value:
            if key not in keys:
                raise self.fail(f"{where}.{key}" if where else str(key), "unknown key")
        return value

    def items(self, value: object, where: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, "must be a list")
        return value

    def text(self, value: object, where: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise self.fail(where, "must be a non-empty string")
        return str(value)

    def integer(self, value: object, where: str, *, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, "must be an integer")
        if minimum is not None and value < minimum:
            raise self.fail(where, f"must be at least {minimum}")
        return value

    def boolean(self, value: object, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, "must be true or false")
        return value

    def time(self, value: object, where: str) -> datetime:
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                raise self.fail(where, f"{value!r} is not an ISO 8601 time") from None
        else:
            raise self.fail(where, "must be an ISO 8601 time such as 2026-01-01T12:00:00Z")
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

    def resources(self, value: object, where: str) -> dict[str, int]:
        try:
            return resources.parse_resources(value, field=where)
        except resources.ResourceErrors as exc:
            first = exc.errors[0]
            raise self.fail(first.field, first.message) from None

    def duration(self, value: object, where: str) -> int:
        try:
            return parse_duration(value, field=where)
        except DurationError as exc:
            raise self.fail(where, exc.message) from None

    def choice(self, value: object, where: str, choices: Sequence[str]) -> str:
        if value not in choices:
            raise self.fail(where, f"must be one of {', '.join(choices)}")
        return str(value)


def load_scenario(path: Path) -> Scenario:
    """Read and check one scenario file."""
    file = str(path)
    reader = _Reader(file)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(file, "", f"cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(file, "", f"is not valid YAML: {exc}") from None
    data = reader.mapping(raw, "", TOP_KEYS)
    name = reader.text(data.get("name"), "name")
    policy = reader.choice(data.get("policy"), "policy", POLICIES)
    now = reader.time(data.get("now"), "now")
    config = _read_config(reader, data)
    paths = config.queues_by_path()
    nodes = tuple(_read_node(reader, item, f"nodes[{i}]") for i, item in enumerate(
        reader.items(data.get("nodes"), "nodes")))  # fmt: skip
    node_names = {node.name for node in nodes}
    allocations = tuple(
        _read_allocation(reader, item, f"allocations[{i}]", paths, node_names)
        for i, item in enumerate(reader.items(data.get("allocations"), "allocations"))
    )
    asks = tuple(
        _read_ask(reader, item, f"asks[{i}]", paths, node_names)
        for i, item in enumerate(reader.items(data.get("asks"), "asks"))
    )
    budgets = tuple(
        _read_budget(reader, item, f"budgets[{i}]")
        for i, item in enumerate(reader.items(data.get("budgets"), "budgets"))
    )
    for label, ids in (
        ("nodes", [n.name for n in nodes]),
        ("allocations", [a.id for a in allocations]),
        ("asks", [a.id for a in asks]),
        ("budgets", [b.name for b in budgets]),
    ):
        duplicates = sorted({x for x in ids if ids.count(x) > 1})
        if duplicates:
            raise reader.fail(label, f"duplicate ids: {', '.join(duplicates)}")
    running_runs = frozenset(
        reader.text(item, f"running_runs[{i}]")
        for i, item in enumerate(reader.items(data.get("running_runs"), "running_runs"))
    )
    state = ClusterState(
        config=config,
        nodes=nodes,
        allocations=allocations,
        asks=asks,
        budgets=budgets,
        running_runs=running_runs,
    )
    options = _read_options(reader, data.get("options"))
    expect = _read_expect(reader, data.get("expect"), policy)
    if policy == "quota_timeline":
        timeline = tuple(
            _read_change(reader, item, f"timeline[{i}]", paths)
            for i, item in enumerate(reader.items(data.get("timeline"), "timeline"))
        )
        if not timeline:
            raise reader.fail("timeline", "a quota_timeline needs at least one change")
        until = reader.time(data.get("until"), "until")
        return Scenario(name, file, policy, now, state, None, options, expect, timeline, until)
    action = _read_action(reader, data.get("action"), policy, state)
    return Scenario(name, file, policy, now, state, action, options, expect)


def _read_config(reader: _Reader, data: Mapping[str, Any]) -> PartitionConfig:
    settings = PartitionSettings(name="default")
    block = reader.mapping(data.get("partition"), "partition", PARTITION_KEYS)
    values: dict[str, Any] = {}
    for key in ("quota_preemption_enabled", "preemption_enabled"):
        if key in block:
            values[key] = reader.boolean(block[key], f"partition.{key}")
    if "miss_percent" in block:
        values["miss_percent"] = reader.integer(
            block["miss_percent"], "partition.miss_percent", minimum=0
        )
    for key in ("default_preemption_delay", "daemonset_preemption_delay"):
        if key in block:
            values[key] = reader.duration(block[key], f"partition.{key}")
    if "ask_policy" in block:
        values["ask_policy"] = reader.choice(
            block["ask_policy"], "partition.ask_policy", ASK_POLICIES
        )
    settings = PartitionSettings(**{**settings.to_json(), **values})

    queues, errors = parse_queue_tree(data.get("queues"), at="queues")
    if errors:
        raise reader.fail(errors[0].location, errors[0].message)
    for queue in queues:
        for error in property_errors(queue):
            raise reader.fail(f"queues[{queue.path}].{error.field}", error.message)
    if not queues or queues[0].path != ROOT:
        raise reader.fail("queues", "no queues")
    return PartitionConfig(settings=settings, queues=queues)


def _read_node(reader: _Reader, raw: object, at: str) -> Node:
    item = reader.mapping(raw, at, NODE_KEYS)
    return Node(
        name=reader.text(item.get("name"), f"{at}.name"),
        capacity=reader.resources(item.get("capacity"), f"{at}.capacity"),
        schedulable=reader.boolean(item.get("schedulable", True), f"{at}.schedulable"),
    )


def _queue_ref(reader: _Reader, value: object, at: str, paths: Mapping[str, Any]) -> str:
    path = reader.text(value, at)
    if path not in paths:
        raise reader.fail(at, f"no queue {path!r}")
    return path


def _node_ref(reader: _Reader, value: object, at: str, nodes: set[str]) -> str | None:
    name = reader.text(value, at, optional=True)
    if name is not None and name not in nodes:
        raise reader.fail(at, f"no node {name!r}")
    return name


def _read_allocation(
    reader: _Reader, raw: object, at: str, paths: Mapping[str, Any], nodes: set[str]
) -> Allocation:
    item = reader.mapping(raw, at, ALLOCATION_KEYS)
    allocation_id = reader.text(item.get("id"), f"{at}.id")
    node = _node_ref(reader, item.get("node"), f"{at}.node", nodes)
    if node is None:
        raise reader.fail(f"{at}.node", "must name the node the task runs on")
    qos = item.get("qos")
    return Allocation(
        id=allocation_id,
        app=reader.text(item.get("app", allocation_id), f"{at}.app"),
        queue=_queue_ref(reader, item.get("queue"), f"{at}.queue", paths),
        node=node,
        resources=reader.resources(item.get("resources"), f"{at}.resources"),
        priority=reader.integer(item.get("priority", 0), f"{at}.priority"),
        allow_preemption=reader.boolean(
            item.get("allow_preemption", True), f"{at}.allow_preemption"
        ),
        originator=reader.boolean(item.get("originator", False), f"{at}.originator"),
        required_node=_node_ref(reader, item.get("required_node"), f"{at}.required_node", nodes),
        job=reader.text(item.get("job"), f"{at}.job", optional=True),
        qos=None if qos is None else QoS(reader.choice(qos, f"{at}.qos", [q.value for q in QoS])),
        pdb=reader.text(item.get("pdb"), f"{at}.pdb", optional=True),
        created_at=_created_at(reader, item, at),
        state=AllocationState(
            reader.choice(item.get("state", "running"), f"{at}.state", ["running", "preempting"])
        ),
    )


def _created_at(reader: _Reader, item: Mapping[str, Any], at: str) -> datetime:
    if "created_at" not in item:
        return DEFAULT_CREATED_AT
    return reader.time(item["created_at"], f"{at}.created_at")


def _read_ask(
    reader: _Reader, raw: object, at: str, paths: Mapping[str, Any], nodes: set[str]
) -> Ask:
    item = reader.mapping(raw, at, ASK_KEYS)
    ask_id = reader.text(item.get("id"), f"{at}.id")
    policies = [p.value for p in PreemptionPolicy]
    return Ask(
        id=ask_id,
        app=reader.text(item.get("app", ask_id), f"{at}.app"),
        queue=_queue_ref(reader, item.get("queue"), f"{at}.queue", paths),
        resources=reader.resources(item.get("resources"), f"{at}.resources"),
        priority=reader.integer(item.get("priority", 0), f"{at}.priority"),
        allow_preemption=reader.boolean(
            item.get("allow_preemption", True), f"{at}.allow_preemption"
        ),
        preemption_policy=PreemptionPolicy(
            reader.choice(
                item.get("preemption_policy", "PreemptLowerPriority"),
                f"{at}.preemption_policy",
                policies,
            )
        ),
        required_node=_node_ref(reader, item.get("required_node"), f"{at}.required_node", nodes),
        job=reader.text(item.get("job"), f"{at}.job", optional=True),
        created_at=_created_at(reader, item, at),
        state=AskState(
            reader.choice(item.get("state", "pending"), f"{at}.state", [s.value for s in AskState])
        ),
        node=_node_ref(reader, item.get("node"), f"{at}.node", nodes),
    )


def _read_budget(reader: _Reader, raw: object, at: str) -> Budget:
    item = reader.mapping(raw, at, BUDGET_KEYS)
    return Budget(
        name=reader.text(item.get("name"), f"{at}.name"),
        allowed_disruptions=reader.integer(
            item.get("allowed_disruptions"), f"{at}.allowed_disruptions", minimum=0
        ),
    )


def _read_options(reader: _Reader, raw: object) -> Options:
    item = reader.mapping(raw, "options", OPTION_KEYS)
    defaults = Options()
    strategy = item.get("victim_strategy", list(defaults.victim_strategy))
    strategies = tuple(
        reader.choice(value, f"options.victim_strategy[{i}]", STRATEGIES)
        for i, value in enumerate(reader.items(strategy, "options.victim_strategy"))
    )
    return Options(
        victim_strategy=strategies,
        deviation_percent=reader.integer(
            item.get("deviation_percent", defaults.deviation_percent),
            "options.deviation_percent",
            minimum=0,
        ),
        max_victims=reader.integer(
            item.get("max_victims", defaults.max_victims), "options.max_victims", minimum=1
        ),
        soft_eviction=reader.boolean(
            item.get("soft_eviction", defaults.soft_eviction), "options.soft_eviction"
        ),
    )


def _read_action(reader: _Reader, raw: object, policy: str, state: ClusterState) -> tuple[str, Any]:
    item = reader.mapping(raw, "action", {"quota", "ask", "job"})
    if len(item) != 1:
        raise reader.fail("action", "must have exactly one of quota, ask, job")
    [(kind, value)] = item.items()
    expected = {"quota": "quota", "job": "job"}.get(policy, "ask")
    if kind != expected:
        raise reader.fail(f"action.{kind}", f"policy {policy} decides on action '{expected}'")
    if kind == "quota":
        block = reader.mapping(value, "action.quota", {"queue", "max"})
        path = _queue_ref(
            reader, block.get("queue"), "action.quota.queue", state.config.queues_by_path()
        )
        return kind, (path, reader.resources(block.get("max"), "action.quota.max"))
    if kind == "ask":
        ask_id = reader.text(value, "action.ask")
        if ask_id not in state.asks_by_id:
            raise reader.fail("action.ask", f"no ask {ask_id!r}")
        return kind, ask_id
    job = reader.text(value, "action.job")
    if not any(ask.job == job for ask in state.asks):
        raise reader.fail("action.job", f"no ask belongs to job {job!r}")
    return kind, job


def _read_change(reader: _Reader, raw: object, at: str, paths: Mapping[str, Any]) -> ConfigChange:
    item = reader.mapping(raw, at, {"at", "set"})
    moment = reader.time(item.get("at"), f"{at}.at")
    block = reader.mapping(item.get("set"), f"{at}.set", SET_KEYS)
    queue = None
    if "queue" in block:
        queue = _queue_ref(reader, block["queue"], f"{at}.set.queue", paths)
    elif any(key in block for key in ("max", "guaranteed", "properties")):
        raise reader.fail(f"{at}.set.queue", "is required to set max, guaranteed or properties")
    properties = None
    if "properties" in block:
        raw_properties = reader.mapping(
            block["properties"], f"{at}.set.properties", set(block["properties"] or {})
        )
        properties = {
            str(key): None if value is None else str(value) for key, value in raw_properties.items()
        }
    partition = None
    if "partition" in block:
        partition = _read_config(
            reader, {"partition": block["partition"], "queues": [{"name": ROOT}]}
        ).settings
        given = reader.mapping(block["partition"], f"{at}.set.partition", PARTITION_KEYS)
        partition = {key: getattr(partition, key) for key in given}
    return ConfigChange(
        at=moment,
        queue=queue,
        max=reader.resources(block["max"], f"{at}.set.max") if "max" in block else None,
        guaranteed=(
            reader.resources(block["guaranteed"], f"{at}.set.guaranteed")
            if "guaranteed" in block
            else None
        ),
        properties=properties,
        partition=partition,
    )


def _read_expect(reader: _Reader, raw: object, policy: str) -> Expect:
    item = reader.mapping(raw, "expect", EXPECT_KEYS)
    if not item:
        raise reader.fail("expect", "is required")
    victims = None
    if "victims" in item:
        victims = frozenset(
            reader.text(v, f"expect.victims[{i}]")
            for i, v in enumerate(reader.items(item["victims"], "expect.victims"))
        )
    outcome = None
    if "outcome" in item:
        outcome = Outcome(
            reader.choice(item["outcome"], "expect.outcome", [o.value for o in Outcome])
        )
    targets = None
    if "targets" in item:
        block = reader.mapping(item["targets"], "expect.targets", set(item["targets"] or {}))
        targets = {
            str(path): reader.resources(value, f"expect.targets.{path}")
            for path, value in block.items()
        }
    explanations = None
    if "explanations" in item:
        block = reader.mapping(
            item["explanations"], "expect.explanations", set(item["explanations"] or {})
        )
        explanations = {
            str(candidate): Reason(
                reader.choice(code, f"expect.explanations.{candidate}", [r.value for r in Reason])
            )
            for candidate, code in block.items()
        }
    nominations = None
    if "nominations" in item:
        block = reader.mapping(
            item["nominations"], "expect.nominations", set(item["nominations"] or {})
        )
        nominations = {str(k): reader.text(v, f"expect.nominations.{k}") for k, v in block.items()}
    runs = None
    if "runs" in item:
        if policy != "quota_timeline":
            raise reader.fail("expect.runs", "only a quota_timeline expects runs")
        runs = tuple(
            _read_expected_run(reader, run, f"expect.runs[{i}]")
            for i, run in enumerate(reader.items(item["runs"], "expect.runs"))
        )
    return Expect(
        victims=victims,
        outcome=outcome,
        node=reader.text(item.get("node"), "expect.node", optional=True),
        has_node="node" in item,
        nominations=nominations,
        targets=targets,
        explanations=explanations,
        runs=runs,
    )


def _read_expected_run(reader: _Reader, raw: object, at: str) -> dict[str, Any]:
    item = reader.mapping(raw, at, {"queue", "at", "victims", "outcome"})
    run: dict[str, Any] = {"queue": reader.text(item.get("queue"), f"{at}.queue")}
    run["at"] = reader.time(item.get("at"), f"{at}.at")
    if "victims" in item:
        run["victims"] = frozenset(
            reader.text(v, f"{at}.victims[{i}]")
            for i, v in enumerate(reader.items(item["victims"], f"{at}.victims"))
        )
    if "outcome" in item:
        run["outcome"] = Outcome(
            reader.choice(item["outcome"], f"{at}.outcome", [o.value for o in Outcome])
        )
    return run


# --------------------------------------------------------------------------------------------
# Evaluating
# --------------------------------------------------------------------------------------------


def decide(scenario: Scenario) -> Plan:
    """Run the scenario's policy on its state (not for ``quota_timeline``)."""
    assert scenario.action is not None
    kind, value = scenario.action
    state, now, options = scenario.state, scenario.now, scenario.options
    if kind == "quota":
        path, new_max = value
        return policies.plan_quota_change(state, path, new_max, now)
    if kind == "job":
        return policies.plan_job(state, value, now, options)
    runners: dict[str, Callable[..., Plan]] = {
        "inter_queue": policies.plan_inter_queue,
        "required_node": policies.plan_required_node,
        "priority": policies.plan_priority,
    }
    return runners[scenario.policy](state, value, now, options)


def evaluate(scenario: Scenario) -> Result:
    if scenario.policy == "quota_timeline":
        assert scenario.until is not None
        runs = timers.replay_timeline(scenario.state, scenario.timeline, scenario.until)
        result = Result(scenario, {"runs": [run.to_json() for run in runs]})
        result.mismatches = _compare_runs(scenario.expect, runs)
        return result
    plan = decide(scenario)
    result = Result(scenario, plan.to_json())
    result.mismatches = _compare_plan(scenario.expect, plan)
    return result


def _compare_plan(expect: Expect, plan: Plan) -> list[str]:
    mismatches = []
    if expect.victims is not None and frozenset(plan.victims) != expect.victims:
        mismatches.append(f"victims: expected {sorted(expect.victims)}, got {sorted(plan.victims)}")
    if expect.outcome is not None and plan.outcome != expect.outcome:
        mismatches.append(f"outcome: expected {expect.outcome}, got {plan.outcome}")
    if expect.has_node and plan.node != expect.node:
        mismatches.append(f"node: expected {expect.node}, got {plan.node}")
    if expect.nominations is not None and dict(plan.nominations) != dict(expect.nominations):
        mismatches.append(
            f"nominations: expected {dict(expect.nominations)}, got {dict(plan.nominations)}"
        )
    if expect.targets is not None:
        got = {path: dict(amounts) for path, amounts in plan.targets.items()}
        want = {path: dict(amounts) for path, amounts in expect.targets.items()}
        if got != want:
            mismatches.append(f"targets: expected {want}, got {got}")
    for candidate, reason in (expect.explanations or {}).items():
        explanation = plan.explanation_for(candidate)
        got_reason = None if explanation is None else str(explanation.reason)
        if got_reason != reason:
            mismatches.append(f"explanations.{candidate}: expected {reason}, got {got_reason}")
    return mismatches


def _compare_runs(expect: Expect, runs: list[TimelineRun]) -> list[str]:
    if expect.runs is None:
        return []
    mismatches = []
    if len(runs) != len(expect.runs):
        mismatches.append(f"runs: expected {len(expect.runs)} runs, got {len(runs)}")
    for index, (want, got) in enumerate(zip(expect.runs, runs, strict=False)):
        if got.queue != want["queue"]:
            mismatches.append(f"runs[{index}].queue: expected {want['queue']}, got {got.queue}")
        if got.at != want["at"]:
            mismatches.append(f"runs[{index}].at: expected {want['at']}, got {got.at}")
        if "victims" in want and frozenset(got.victims) != want["victims"]:
            expected, got_victims = sorted(want["victims"]), sorted(got.victims)
            mismatches.append(f"runs[{index}].victims: expected {expected}, got {got_victims}")
        if "outcome" in want and got.outcome != want["outcome"]:
            mismatches.append(
                f"runs[{index}].outcome: expected {want['outcome']}, got {got.outcome}"
            )
    return mismatches


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def scenario_files(arguments: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in {".yaml", ".yml"}))
        else:
            files.append(path)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m preemption.scenario", description="Evaluate preemption scenario files."
    )
    parser.add_argument("paths", nargs="+", help="scenario files or folders of *.yaml")
    parser.add_argument("--json-only", action="store_true", help="omit the summary line")
    arguments = parser.parse_args(argv)

    passed = failed = 0
    invalid = False
    for path in scenario_files(arguments.paths):
        try:
            result = evaluate(load_scenario(path))
        except ScenarioError as exc:
            print(f"error: {exc}", file=sys.stderr)
            invalid = True
            continue
        print(json.dumps(result.to_json(), sort_keys=False))
        if result.passed:
            passed += 1
        else:
            failed += 1
    if not arguments.json_only:
        print(f"{passed} passed, {failed} failed")
    if invalid:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
