"""The selector parser and the patch appliers behind the fake Kubernetes API server. No database."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.kube import patches
from tests.support.kube.selectors import (
    SelectorError,
    fields_match,
    from_label_selector,
    matches,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "replicas": "3", "example.com/team": "a"}


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web,tier=front", True),
        ("app=api", False),
        ("app!=api", True),
        ("missing!=x", True),  # != also matches an absent label, as in Kubernetes
        ("app in (api,web)", True),
        ("app notin (api, web)", False),
        ("missing notin (x)", True),
        ("example.com/team", True),
        ("!example.com/team", False),
        ("!missing", True),
        ("replicas>2,replicas<4", True),
        ("replicas>3", False),
        ("tier in (front),app", True),
    ],
)
def test_label_selectors_match_as_kubernetes_does(selector: str, selected: bool) -> None:
    assert matches(parse_label_selector(selector), LABELS) is selected


@pytest.mark.parametrize(
    "selector", ["app in ()", "app=we b", "=web", "app in (a", "replicas>x", ","]
)
def test_malformed_label_selectors_are_rejected(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(selector)


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        (None, None),  # no selector: selects nothing
        ({}, True),  # empty selector: selects everything
        ({"matchLabels": {"app": "web"}}, True),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}],
            },
            False,
        ),
        ({"matchExpressions": [{"key": "missing", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, None),  # invalid: nothing
    ],
)
def test_budget_selectors_follow_label_selector_as_selector(
    selector: dict[str, Any] | None, selected: bool | None
) -> None:
    requirements = from_label_selector(selector)

    if selected is None:
        assert requirements is None
    else:
        assert requirements is not None and matches(requirements, LABELS) is selected


def test_field_selectors_know_each_resources_fields() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "n"},
        "spec": {"schedulerName": "yunikorn"},
        "status": {"phase": "Pending"},
    }

    assert fields_match(
        parse_field_selector("spec.nodeName=,status.phase=Pending", "pods"), "pods", pod
    )
    assert not fields_match(
        parse_field_selector("spec.schedulerName!=yunikorn", "pods"), "pods", pod
    )
    assert fields_match(
        parse_field_selector("spec.unschedulable=false", "nodes"),
        "nodes",
        {"metadata": {"name": "n"}},
    )
    with pytest.raises(SelectorError, match=r"field label not supported: spec\.nodeName"):
        parse_field_selector("spec.nodeName=x", "configmaps")


def test_merge_patch_merges_objects_and_deletes_with_null() -> None:
    target = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2]}}

    assert patches.apply(
        patches.MERGE,
        target,
        {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"list": [3]}},
    ) == {
        "metadata": {"labels": {"b": "2", "c": "3"}},
        "spec": {"list": [3]},
    }
    assert target["metadata"]["labels"] == {"a": "1", "b": "2"}  # the target is not changed


def test_strategic_merge_patch_refuses_directives_it_would_misapply() -> None:
    with pytest.raises(patches.PatchError) as raised:
        patches.apply(
            patches.STRATEGIC,
            {"spec": {}},
            {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
        )

    assert raised.value.code == 400


def test_json_patch_operations() -> None:
    target = {"metadata": {"labels": {"a/b": "1"}}, "list": [1, 2, 3]}
    operations = [
        {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
        {"op": "add", "path": "/list/1", "value": 9},
        {"op": "remove", "path": "/list/0"},
        {"op": "add", "path": "/list/-", "value": 7},
        {"op": "copy", "from": "/metadata/labels", "path": "/copied"},
        {"op": "move", "from": "/copied", "path": "/moved"},
        {"op": "test", "path": "/moved/a~1b", "value": "2"},
    ]

    assert patches.apply(patches.JSON_PATCH, target, operations) == {
        "metadata": {"labels": {"a/b": "2"}},
        "list": [9, 2, 3, 7],
        "moved": {"a/b": "2"},
    }


@pytest.mark.parametrize(
    ("content_type", "body", "code"),
    [
        (patches.JSON_PATCH, [{"op": "test", "path": "/a", "value": 2}], 422),
        (patches.JSON_PATCH, [{"op": "remove", "path": "/missing"}], 422),
        (patches.JSON_PATCH, {"op": "add"}, 400),
        (patches.MERGE, [1], 400),
        ("application/apply-patch+yaml", {"a": 1}, 415),
    ],
)
def test_bad_patches_carry_the_status_the_server_answers(
    content_type: str, body: Any, code: int
) -> None:
    with pytest.raises(patches.PatchError) as raised:
        patches.apply(content_type, {"a": 1}, body)

    assert raised.value.code == code
