"""A ``queues.yaml`` is read as YuniKorn reads it (``scheduler_admin.queues.yaml_io``).

YuniKorn decodes the file with Go's YAML into its config structs, where names, ACLs and every
value of ``resources`` and ``properties`` are Go strings: the text as written. PyYAML's
``safe_load`` reads YAML 1.1 numbers there instead, so ``memory: 010`` was 8 (YuniKorn: 10) and
``1_000``, ``1:30``, ``0x10``, ``+100`` were taken where YuniKorn refuses them. Also here: the
loader's own refusals (aliases, duplicate keys, depth, unbuildable scalars) still hold now that
it reads the parser's events, and every real config of the shared corpus still gets YuniKorn's
own verdict.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from preemption.config import PartitionConfig, PartitionSettings
from preemption.hierarchy import ConfigErrors
from preemption.yunikorn import dump_scheduler_config
from scheduler_admin.queues.yaml_io import load_yaml_text, parse_queues_yaml

GI = 1024**3
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "yunikorn-configs"


def parse(text: str) -> list[PartitionConfig]:
    return parse_queues_yaml(text, settings_for=lambda name: PartitionSettings(name=name))


def errors_of(text: str) -> dict[str, str]:
    with pytest.raises(ConfigErrors) as caught:
        parse(text)
    return {error.location: error.message for error in caught.value.errors}


def one_queue(body: str) -> str:
    """A partition with one queue ``root.a`` whose lines are ``body``."""
    lines = "".join(f"            {line}\n" for line in body.splitlines())
    return (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: a\n" + lines
    )


# --------------------------------------------------------------------------------------------
# resources and properties: the text as written
# --------------------------------------------------------------------------------------------


def test_a_leading_zero_is_decimal_as_in_yunikorn_not_octal() -> None:
    (config,) = parse(
        one_queue("resources: {max: {memory: 010, vcore: 010}}\nproperties: {x: 010}")
    )
    queue = config.queue("root.a")
    assert queue is not None
    assert queue.max == {"memory": 10, "vcore": 10_000}  # YAML 1.1 read 8 and 8 cores
    assert queue.properties == {"x": "010"}  # YAML 1.1 made it "8"


@pytest.mark.parametrize("written", ["1_000", "1:30", "0x10", "+100", "0o10", "0b101"])
def test_yaml_number_forms_are_quantities_yunikorn_refuses(written: str) -> None:
    errors = errors_of(one_queue(f"resources: {{max: {{memory: {written}}}}}"))
    assert list(errors) == ["root.a: resources.max.memory"]
    message = errors["root.a: resources.max.memory"]
    assert repr(written) in message
    if written != "0o10":  # not a number in YAML 1.1 either (PyYAML reads it as text)
        assert "YuniKorn reads quantities as the text written" in message


@pytest.mark.parametrize(
    ("written", "kept"),
    [("1_000", "1_000"), ("0x10", "0x10"), ("+100", "+100"), ("yes", "yes"), ("1.50", "1.50"),
     ("~", None)],
)  # fmt: skip
def test_property_values_are_the_text_written(written: str, kept: str | None) -> None:
    text = one_queue(f"properties: {{application.sort.policy.note: {written}}}")
    if kept is None:  # an empty value stays empty, and is refused
        assert "empty value" in errors_of(text)["root.a: properties.application.sort.policy.note"]
        return
    (config,) = parse(text)
    assert config.queue("root.a").properties == {"application.sort.policy.note": kept}  # type: ignore[union-attr]


def test_a_delay_written_as_base_60_is_refused_not_read_as_seconds() -> None:
    # YAML 1.1 read 1:30 as 90 and the product saved a delay of 90s; Go's ParseDuration
    # refuses "1:30", so YuniKorn never used it.
    errors = errors_of(one_queue("properties: {quota.preemption.delay: 1:30}"))
    assert "root.a: properties.quota.preemption.delay" in errors


def test_names_are_text_too() -> None:
    text = (
        "partitions:\n  - name: 2024\n    queues:\n      - name: root\n        queues:\n"
        "          - name: 010\n          - name: 0x1f\n"
    )
    (config,) = parse(text)
    assert config.name == "2024"
    assert [queue.path for queue in config.queues] == ["root", "root.010", "root.0x1f"]


def test_keys_of_text_maps_are_text_and_kept_keys_keep_their_text() -> None:
    text = one_queue(
        "properties: {010: x}\n"
        "childtemplate: {resources: {max: {memory: 010}}, properties: {y: 0x10}}\n"
        "limits: [{limit: l, users: [u], maxresources: {memory: 010}}]"
    )
    (config,) = parse(text)
    queue = config.queue("root.a")
    assert queue is not None
    assert queue.properties == {"010": "x"}
    assert queue.extra["childtemplate"] == {"resources": {"max": {"memory": "010"}},
                                            "properties": {"y": "0x10"}}  # fmt: skip
    assert queue.extra["limits"][0]["maxresources"] == {"memory": "010"}
    # Exported, the text stays text (quoted where YAML would read a number), so YuniKorn
    # reads what the file said.
    exported = yaml.safe_dump(dump_scheduler_config([config]), sort_keys=False)
    assert "'010': x" in exported and "memory: '010'" in exported
    assert parse(exported) == [config]


def test_other_fields_keep_yaml_types() -> None:
    """``maxapplications`` (a Go integer) and ``parent`` (a Go bool) are not text."""
    (config,) = parse(one_queue("maxapplications: 010\nparent: yes"))
    queue = config.queue("root.a")
    assert queue is not None
    assert queue.extra == {"maxapplications": 8, "parent": True}


def test_an_explicit_tag_must_fit_its_value_even_where_text_is_read() -> None:
    """Go's decoder checks an explicit tag against the value, then keeps the text."""
    (config,) = parse(one_queue("properties: {x: !!int 010}"))
    assert config.queue("root.a").properties == {"x": "010"}  # type: ignore[union-attr]
    errors = errors_of(one_queue("properties: {x: !!int ten}"))
    assert list(errors) == ["queues.yaml"]
    assert "line 7" in errors["queues.yaml"] and "cannot read this value as int" in errors[
        "queues.yaml"]  # fmt: skip


# --------------------------------------------------------------------------------------------
# the loader's refusals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a: &x 1\nb: *x", "line 2, column 4: YAML aliases are not accepted (*x)"),
        ("a: 1\na: 2", "line 2, column 1: duplicate key 'a'"),
        ("a: !!set {x, y}", "the tag tag:yaml.org,2002:set is not accepted here"),
        ("a: 2001-13-45", "cannot read this value as timestamp"),
        ("a: !foo 1", "could not determine a constructor for the tag '!foo'"),
        ("? [a]\n: 1", "found unhashable key"),
        ("a: " + "9" * 5000, "integer of more than 4300 digits"),
        ("", "must contain exactly one YAML document"),
        ("--- a\n--- b", "must contain exactly one YAML document"),
    ],
)
def test_the_loader_refuses_what_it_refused(text: str, fragment: str) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_yaml_text(text)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("depth", [65, 100_000])
def test_deep_nesting_is_refused_at_the_limit_without_recursing(depth: int) -> None:
    assert load_yaml_text("[" * 64 + "]" * 64) is not None
    with pytest.raises(ConfigErrors) as caught:
        load_yaml_text("[" * depth + "]" * depth)
    assert "line 1, column 65: nested deeper than 64 levels" in str(caught.value)


def test_everything_else_reads_as_safe_load_reads_it() -> None:
    text = "a: [1, 2.5, true, null, '7', 2024-01-02, 0x10, 1_000, 1:30, .inf]\nb: {c: d}\n"
    assert load_yaml_text(text) == yaml.safe_load(text)


# --------------------------------------------------------------------------------------------
# the corpus: YuniKorn's own verdict on 179 real configs
# --------------------------------------------------------------------------------------------


def _verdicts(folder: Path) -> dict[str, str]:
    """file -> OK or ERR, YuniKorn HEAD's verdict, inverted for the files where the product
    differs on purpose (DELIBERATE.txt)."""
    listed = re.findall(r"^\| (\S+\.yaml) \| (OK|ERR)", (folder / "INDEX.md").read_text(), re.M)
    deliberate = {
        line.split()[0]
        for line in (folder / "DELIBERATE.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    return {
        name: ({"OK": "ERR", "ERR": "OK"}[verdict] if name in deliberate else verdict)
        for name, verdict in listed
        if (folder / name).is_file()  # the probes' table names files under probes/
    }


CORPUS_FILES = [
    (folder / name, verdict)
    for folder in (CORPUS, CORPUS / "more")
    if folder.is_dir()
    for name, verdict in sorted(_verdicts(folder).items())
]


def test_the_corpus_is_there() -> None:
    assert len(CORPUS_FILES) == 179, f"expected the 179 real configs under {CORPUS}"


@pytest.mark.parametrize(("path", "verdict"), CORPUS_FILES, ids=lambda v: getattr(v, "name", v))
def test_every_real_config_gets_yunikorns_verdict(path: Path, verdict: str) -> None:
    try:
        configs = parse_queues_yaml(
            path.read_bytes(),
            settings_for=lambda name: PartitionSettings(name=name),
            source=path.name,
        )
    except ConfigErrors as exc:
        assert verdict == "ERR", f"refused what YuniKorn accepts: {exc}"
        return
    assert verdict == "OK", "accepted what YuniKorn refuses"
    # The export is read back to the same configs (every delay kept, as a Go duration).
    exported = yaml.safe_dump(dump_scheduler_config(configs), sort_keys=False)
    assert parse(exported) == configs
