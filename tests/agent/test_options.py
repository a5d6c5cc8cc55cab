"""The agent's options: flags, their AGENT_* variables, and clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_admin_agent.options import parse_options


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("abc123\n")
    return path


def test_every_option_comes_from_the_environment(token_file: Path) -> None:
    options = parse_options(
        [],
        {
            "AGENT_API": "http://product:8000",
            "AGENT_TOKEN_FILE": str(token_file),
            "AGENT_PARTITION": "default",
            "AGENT_INTERVAL": "5",
            "AGENT_UNIQUE_APP_IDS": "true",
            "AGENT_PUBLISH_CONFIG": "yes",
            "AGENT_CONFIGMAP_NAMESPACE": "yk",
            "AGENT_NAME": "agent-1",
            "AGENT_CLUSTER_NAME": "kind-dev",
        },
    )
    assert (options.api, options.token, options.partition) == (
        "http://product:8000",
        "abc123",
        "default",
    )
    assert options.interval == 5
    assert options.unique_app_ids and options.publish_config
    assert (options.configmap_namespace, options.configmap_name) == ("yk", "yunikorn-configs")
    assert (options.agent_name, options.cluster_name) == ("agent-1", "kind-dev")


def test_flags_win_over_the_environment(token_file: Path) -> None:
    options = parse_options(
        ["--api", "https://a", "--partition", "p2", "--token-file", str(token_file)],
        {"AGENT_API": "http://b", "AGENT_PARTITION": "p1"},
    )
    assert (options.api, options.partition) == ("https://a", "p2")
    assert options.publish_config is False  # read-only unless asked


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        ([], {}, "missing --api, --partition"),
        (["--api", "ftp://x", "--partition", "p"], {"AGENT_TOKEN": "t"}, "expected an http"),
        (["--api", "http://x", "--partition", "p"], {}, "missing --token-file"),
        (
            ["--api", "http://x", "--partition", "p", "--interval", "0"],
            {"AGENT_TOKEN": "t"},
            "--interval",
        ),
        (
            ["--api", "http://x", "--partition", "p", "--page-items", "0"],
            {"AGENT_TOKEN": "t"},
            "--page-items",
        ),
        (
            ["--api", "http://x", "--partition", "p"],
            {"AGENT_TOKEN": "t", "AGENT_PAGE_ITEMS": "lots"},
            "--page-items",
        ),
        (
            ["--api", "http://x", "--partition", "p", "--webhook-listen", "x"],
            {"AGENT_TOKEN": "t"},
            "HOST:PORT",
        ),
        (
            ["--api", "http://x", "--partition", "p", "--webhook-listen", ":8080"],
            {"AGENT_TOKEN": "t"},
            "--webhook-secret-file",
        ),
    ],
)
def test_bad_options_stop_with_the_option_named(
    argv: list[str], env: dict[str, str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_options(argv, env)
    assert stopped.value.code == 2
    assert says in capsys.readouterr().err


def test_an_unreadable_or_empty_token_file_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("  \n")
    base = ["--api", "http://x", "--partition", "p", "--token-file"]
    with pytest.raises(SystemExit, match="is empty"):
        parse_options([*base, str(empty)], {})
    with pytest.raises(SystemExit, match="No such file"):
        parse_options([*base, str(tmp_path / "missing")], {})


def test_a_bad_boolean_variable_is_refused() -> None:
    with pytest.raises(SystemExit, match="AGENT_PUBLISH_CONFIG"):
        parse_options([], {"AGENT_PUBLISH_CONFIG": "maybe"})
