"""Tests for preemption.yunikorn_rules: YuniKorn's own rules for the keys the product keeps.

Each rule has a config YuniKorn accepts and one it refuses; the test name ends with the YuniKorn
rule it follows (``__checkLimit`` is ``configvalidator.go``'s function, ``__strict_decoder`` the
go-yaml v3 ``KnownFields`` parse, ``__fixedRule`` the placement rule's initialisation, ...) or with
``__product`` where the product is deliberately stricter than YuniKorn. Many cases come from
YuniKorn's ``configvalidator_test.go`` and from the examples in its documentation.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import ConfigError
from preemption.yunikorn import load_scheduler_config
from preemption.yunikorn_rules import yunikorn_rule_errors, yunikorn_rule_warnings
from tests.unit.builders import config, only_error, queue

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def where(errors: list[ConfigError]) -> list[tuple[str | None, str]]:
    """(queue, field) of every error, in order."""
    return [(error.queue, error.field) for error in errors]


def partition(*queues: QueueConfig, **extra: Any) -> PartitionConfig:
    """A partition whose kept keys are ``extra`` (``placementrules=[...]``, ``limits=[...]``)."""
    return config(*queues, extra=extra)


def refused(cfg: PartitionConfig) -> ConfigError:
    """The single error YuniKorn's rules find in ``cfg``."""
    return only_error(yunikorn_rule_errors(cfg))


def accepted(cfg: PartitionConfig) -> None:
    errors = yunikorn_rule_errors(cfg)
    assert errors == [], [str(error) for error in errors]


def from_yaml(text: str) -> PartitionConfig:
    """The one partition of a ``queues.yaml`` document, as PyYAML and the importer read it."""
    (loaded,) = load_scheduler_config(yaml.safe_load(text))
    return loaded


def placement_tree(*rules: dict[str, Any]) -> PartitionConfig:
    """YuniKorn's ``createQueueConfig`` tree with ``rules`` as the partition's placement rules:
    root.users (parent), root.devs (parent) with root.devs.yunikorn (parent), root.default
    (leaf), root.admins (parent)."""
    return partition(
        queue("root.users", extra={"parent": True}),
        queue("root.devs", extra={"parent": True}),
        queue("root.devs.yunikorn", extra={"parent": True}),
        queue("root.default", extra={"parent": False}),
        queue("root.admins", extra={"parent": True}),
        placementrules=list(rules),
    )


def limits_on(path: str, *limits: dict[str, Any], **extra: Any) -> QueueConfig:
    return queue(path, extra={"limits": list(limits), **extra})


def user_limit(*users: str, **fields: Any) -> dict[str, Any]:
    return {"limit": "users", "users": list(users), **fields}


def group_limit(*groups: str, **fields: Any) -> dict[str, Any]:
    return {"limit": "groups", "groups": list(groups), **fields}


# --------------------------------------------------------------------------------------------
# real-world documents YuniKorn accepts
# --------------------------------------------------------------------------------------------

YUNIKORN_DEFAULT = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
"""

DOCS_EXAMPLES = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
        parent:
          name: user
          create: true
      - name: user
        create: true
        filter:
          type: allow
          groups:
            - dev*
        parent:
          name: tag
          value: namespace
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.namespaces
          filter:
            type: allow
            users:
              - john
      - name: fixed
        value: root.production
      - name: fixed
        value: last_resort
    limits:
      - limit: partition cap
        users: [sue, bob, "*"]
        maxapplications: 10
        maxresources: {memory: 100Gi, vcore: 40}
    nodesortpolicy:
      type: binpacking
      resourceweights: {vcore: 4.0, memory: 1}
    usergroupresolver:
      type: os
    queues:
      - name: root
        submitacl: '*'
        childtemplate:
          maxapplications: 10
          properties:
            application.sort.policy: fifo
          resources:
            guaranteed: {vcore: 1, memory: 1G}
            max: {vcore: 20, memory: 600G}
        queues:
          - name: namespaces
            parent: true
            maxapplications: 12
            resources:
              guaranteed: {memory: 1G, vcore: 10}
              max: {memory: 10G, vcore: 100}
            childtemplate:
              resources:
                max: {vcore: 21, memory: 610G}
            limits:
              - limit: per user
                users: [sue, "*"]
                maxapplications: 5
              - limit: per group
                groups: [dev, "*"]
                maxresources: {memory: 5G, nvidia.com/gpu: 0}
            queues:
              - name: level1
                maxapplications: 8
                resources:
                  guaranteed: {memory: 500M, vcore: 5}
                  max: {memory: 5G, vcore: 50}
          - name: production
            submitacl: john,bob
            adminacl: " ops-admins"
            properties:
              application.sort.policy: fair
              application.sort.priority: disabled
              priority.policy: fence
              priority.offset: "-10"
              application.unschedasks.backoff: "3"
          - name: last_resort
"""


def test_yunikorn_default_config_accepted__DefaultSchedulerConfig() -> None:
    cfg = from_yaml(YUNIKORN_DEFAULT)
    accepted(cfg)
    assert yunikorn_rule_warnings(cfg) == []


def test_documentation_examples_accepted__queue_config_and_placement_rules_docs() -> None:
    cfg = from_yaml(DOCS_EXAMPLES)
    accepted(cfg)
    assert yunikorn_rule_warnings(cfg) == []


def test_docs_parent_rule_written_as_a_list_refused__strict_decoder() -> None:
    # The placement rules page writes `parent:` as a list; YuniKorn's struct wants one rule.
    cfg = placement_tree({"name": "user", "parent": [{"name": "tag", "value": "namespace"}]})
    error = refused(cfg)
    assert (error.queue, error.field) == (None, "extra.placementrules[0].parent")
    assert "must be a mapping" in error.message


# --------------------------------------------------------------------------------------------
# types, as go-yaml v3 decodes into YuniKorn's structs
# --------------------------------------------------------------------------------------------


def test_parent_flag_bool_accepted__strict_decoder() -> None:
    accepted(
        config(queue("root.a", extra={"parent": True}), queue("root.b", extra={"parent": None}))
    )


@pytest.mark.parametrize("value", ["true", "yes", 1, [True]])
def test_parent_flag_not_a_bool_refused__strict_decoder(value: object) -> None:
    error = refused(config(queue("root.a", extra={"parent": value})))
    assert (error.queue, error.field) == ("root.a", "extra.parent")
    assert "must be true or false" in error.message


@pytest.mark.parametrize("value", [0, 1, 2**64 - 1, None])
def test_maxapplications_uint64_accepted__strict_decoder(value: object) -> None:
    accepted(config(queue("root.a", extra={"maxapplications": value})))


MAX_APPLICATIONS_REFUSED = [-1, 2**64, 2.0, 2.5, "5", True, {"a": 1}, 10**5000]


@pytest.mark.parametrize(
    "value", MAX_APPLICATIONS_REFUSED, ids=range(len(MAX_APPLICATIONS_REFUSED))
)
def test_maxapplications_not_uint64_refused__strict_decoder(value: object) -> None:
    error = refused(config(queue("root.a", extra={"maxapplications": value})))
    assert (error.queue, error.field) == ("root.a", "extra.maxapplications")
    assert "whole number from 0 to 18446744073709551615" in error.message
    assert len(error.message) < 200


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"placementrules": [{"name": "user", "Create": True}]}, "extra.placementrules[0].Create"),
        (
            {"placementrules": [{"name": "user", "filter": {"type": "allow", "user": ["a"]}}]},
            "extra.placementrules[0].filter.user",
        ),
        (
            {"limits": [{"users": ["a"], "maxapplications": 1, "maxapps": 2}]},
            "extra.limits[0].maxapps",
        ),
        ({"nodesortpolicy": {"type": "fair", "weights": {}}}, "extra.nodesortpolicy.weights"),
        ({"usergroupresolver": {"type": "ldap", "host": "x"}}, "extra.usergroupresolver.host"),
    ],
)
def test_unknown_key_inside_a_partition_structure_refused__strict_decoder(
    extra: dict[str, Any], field: str
) -> None:
    error = refused(partition(**extra))
    assert (error.queue, error.field) == (None, field)
    assert "unknown key" in error.message


def test_unknown_key_in_childtemplate_refused__strict_decoder() -> None:
    template = {"maxapplications": 1, "resources": {"max": {"memory": "1G"}, "min": {}}}
    cfg = config(queue("root.a", extra={"parent": True, "childtemplate": template}))
    error = refused(cfg)
    assert (error.queue, error.field) == ("root.a", "extra.childtemplate.resources.min")


def test_unknown_key_hints_at_case__strict_decoder() -> None:
    errors = yunikorn_rule_errors(placement_tree({"Name": "user"}, {"name": "user"}))
    assert where(errors) == [
        (None, "extra.placementrules[0].Name"),
        (None, "extra.placementrules[0].name"),
    ]
    assert "write 'name'" in errors[0].message
    assert "needs a name" in errors[1].message


def test_scalar_where_a_list_belongs_refused__strict_decoder() -> None:
    errors = yunikorn_rule_errors(
        partition(
            limits="none",
            placementrules={"name": "user"},
        )
    )
    assert where(errors) == [(None, "extra.placementrules"), (None, "extra.limits")]
    assert all("must be a list" in error.message for error in errors)


def test_scalar_where_a_mapping_belongs_refused__strict_decoder() -> None:
    errors = yunikorn_rule_errors(
        partition(placementrules=[{"name": "user", "filter": "allow"}], usergroupresolver="ldap")
    )
    assert where(errors) == [
        (None, "extra.placementrules[0].filter"),
        (None, "extra.usergroupresolver"),
    ]


def test_bool_or_float_where_text_belongs_refused_with_a_hint_to_quote__product() -> None:
    # go-yaml would read the text of the file, but PyYAML already turned `yes` into True.
    error = refused(placement_tree({"name": "tag", "value": True}))
    assert error.field == "extra.placementrules[0].value"
    assert "put it in quotes" in error.message


def test_a_whole_number_where_text_belongs_reads_as_its_digits__strict_decoder() -> None:
    # go-yaml decodes any scalar into a string field; a whole number means the same to both.
    accepted(placement_tree({"name": "tag", "value": 2024, "create": True}))


def test_null_values_are_the_zero_value__strict_decoder() -> None:
    accepted(
        partition(
            queue("root.a", extra={"adminacl": None, "limits": None, "childtemplate": None}),
            placementrules=None,
            limits=None,
            nodesortpolicy=None,
            usergroupresolver=None,
        )
    )


def test_null_entry_in_a_list_refused__product() -> None:
    errors = yunikorn_rule_errors(
        partition(placementrules=[None], limits=[user_limit("a", maxapplications=1), None])
    )
    assert where(errors) == [(None, "extra.placementrules[0]"), (None, "extra.limits[1]")]


# --------------------------------------------------------------------------------------------
# placement rules: names, create, value
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["provided", "user", "fixed", "tag", "Fixed", "TAG"])
def test_known_rule_name_accepted_in_any_case__newRule(name: str) -> None:
    accepted(placement_tree({"name": name, "value": "default", "create": True}))


@pytest.mark.parametrize("name", ["#fixed", "1234", "@fixed", "fixed rule", ""])
def test_rule_name_not_an_identifier_refused__checkPlacementRule(name: str) -> None:
    error = refused(placement_tree({"name": name, "value": "root.default"}))
    assert error.field == "extra.placementrules[0].name"


def test_nested_parent_rule_name_refused__checkPlacementRule() -> None:
    rule = {
        "name": "fixed",
        "value": "leaf",
        "create": True,
        "parent": {"name": "fixed", "value": "default", "parent": {"name": "@fixed"}},
    }
    error = refused(placement_tree(rule))
    assert error.field == "extra.placementrules[0].parent.parent.name"


@pytest.mark.parametrize("name", ["_fixed", "group", "test", "recovery"])
def test_unknown_or_internal_rule_name_refused__newRule(name: str) -> None:
    error = refused(placement_tree({"name": name}))
    assert error.field == "extra.placementrules[0].name"


def test_create_bool_accepted__strict_decoder() -> None:
    accepted(
        placement_tree({"name": "user", "create": False}, {"name": "provided", "create": True})
    )


def test_create_bogus_refused__strict_decoder() -> None:
    error = refused(placement_tree({"name": "user", "create": "bogus"}))
    assert (error.queue, error.field) == (None, "extra.placementrules[0].create")
    assert "must be true or false" in error.message


@pytest.mark.parametrize(("name", "what"), [("fixed", "queue name"), ("tag", "tag name")])
def test_rule_without_its_value_refused__fixedRule_tagRule(name: str, what: str) -> None:
    error = refused(placement_tree({"name": name, "create": True}))
    assert error.field == "extra.placementrules[0].value"
    assert what in error.message


@pytest.mark.parametrize("value", ["root.a b", "root..a", "a.", "x" * 65])
def test_fixed_value_not_a_queue_path_refused__fixedRule(value: str) -> None:
    error = refused(placement_tree({"name": "fixed", "value": value, "create": True}))
    assert error.field == "extra.placementrules[0].value"
    assert "not a valid queue name" in error.message


@pytest.mark.parametrize("value", ["rooted", "ROOT.default", "Root"])
def test_fixed_value_starting_with_root_but_not_a_full_path_refused__product(value: str) -> None:
    # YuniKorn's rule reads any value starting with "root" as a full path, its validator only a
    # lower-case one: both readings cannot be right.
    error = refused(placement_tree({"name": "fixed", "value": value, "create": True}))
    assert error.field == "extra.placementrules[0].value"
    assert "starts with 'root'" in error.message


def test_qualified_fixed_rule_first_in_chain_accepted__getLongestStaticPath() -> None:
    accepted(
        placement_tree(
            {
                "name": "user",
                "parent": {
                    "name": "tag",
                    "value": "namespace",
                    "parent": {"name": "fixed", "value": "root.users"},
                },
            },
        )
    )


def test_qualified_fixed_rule_with_a_parent_refused__getLongestStaticPath() -> None:
    rule = {
        "name": "fixed",
        "value": "root.default.leaf",
        "parent": {"name": "fixed", "value": "root.default"},
    }
    error = refused(placement_tree(rule))
    assert error.field == "extra.placementrules[0].value"
    assert "cannot have a parent rule" in error.message


def test_value_on_a_rule_that_ignores_it_is_a_warning__userRule() -> None:
    cfg = placement_tree({"name": "user", "value": "namespace", "create": True})
    accepted(cfg)
    warning = only_error(yunikorn_rule_warnings(cfg))
    assert warning.field == "extra.placementrules[0].value"


# --------------------------------------------------------------------------------------------
# placement rules: filters
# --------------------------------------------------------------------------------------------


def filtered(**rule_filter: Any) -> PartitionConfig:
    return placement_tree({"name": "user", "create": True, "filter": rule_filter})


@pytest.mark.parametrize("kind", ["", "allow", "deny", "ALLOW", "Allow", None])
def test_filter_type_accepted__checkPlacementFilter(kind: str | None) -> None:
    accepted(filtered(type=kind, users=["john"]))


def test_filter_type_bogus_refused__checkPlacementFilter() -> None:
    error = refused(
        placement_tree(
            {"name": "user", "parent": {"name": "tag", "value": "ns", "filter": {"type": "bogus"}}}
        )
    )
    assert (error.queue, error.field) == (None, "extra.placementrules[0].parent.filter.type")
    assert "'bogus' is not a filter type" in error.message


@pytest.mark.parametrize("kind", ["DENY", "Deny"])
def test_filter_type_deny_not_lower_case_refused__newFilter_product(kind: str) -> None:
    # The validator accepts it, but the filter itself compares with "deny": it would allow.
    error = refused(filtered(type=kind, users=["john"]))
    assert error.field == "extra.placementrules[0].filter.type"
    assert "treats" in error.message


@pytest.mark.parametrize(
    "user",
    [
        "username-allowed_99",
        "username",
        "username*regexp",
        "user_name",
        "user@name@",
        "username$$",
        "system:serviceaccounts:username:username-77",
        "system:serviceaccounts:username:regexp*",
        "system:serviceaccounts:username.12:username-77-11",
        "^dev.*$",
    ],
)
def test_filter_single_user_name_or_regexp_accepted__checkPlacementFilter(user: str) -> None:
    accepted(filtered(users=[user], groups=["ok"]))


@pytest.mark.parametrize(
    "user",
    [
        "username rejected",
        "",
        "rejected!name",
        "!rejected",
        " rejected ",
        "system:serviceaccounts:username!:username",
        "system:serviceaccounts: :username",
        "system:\\:username",
        "(unclosed",
        "(?=lookahead)x",
        r"(a)\1",
        "a*+",
        "(?x) a",
        "a{1001}",
    ],
)
def test_filter_single_user_neither_name_nor_regexp_refused__checkPlacementFilter(
    user: str,
) -> None:
    error = refused(filtered(users=[user], groups=["ok"]))
    assert error.field == "extra.placementrules[0].filter.users[0]"
    assert "neither a valid user name nor a regular expression" in error.message


@pytest.mark.parametrize(
    "group",
    [
        "groupname-allowed_99",
        "groupname*regexp",
        "group-name",
        "system:authenticated",
        "system:serviceaccounts:groupname-1-test.test",
        "dev*",
        "[[:alpha:]]+",
    ],
)
def test_filter_single_group_name_or_regexp_accepted__checkPlacementFilter(group: str) -> None:
    accepted(filtered(users=["ok"], groups=[group]))


@pytest.mark.parametrize(
    "group",
    [
        "groupname ",
        "group@name",
        "group name",
        " groupname ",
        "!groupname",
        "system:\\:groupname",
        "system:&:groupname",
    ],
)
def test_filter_single_group_neither_name_nor_regexp_refused__checkPlacementFilter(
    group: str,
) -> None:
    error = refused(filtered(users=["ok"], groups=[group]))
    assert error.field == "extra.placementrules[0].filter.groups[0]"


def test_filter_list_of_valid_names_accepted__newFilter() -> None:
    accepted(filtered(type="deny", users=["john", "sue", "john"], groups=["dev", "ops"]))


def test_filter_list_with_an_invalid_user_name_refused__newFilter_product() -> None:
    # YuniKorn silently drops "bob smith" from a list of two or more.
    error = refused(filtered(users=["john", "bob smith", "sue"]))
    assert error.field == "extra.placementrules[0].filter.users[1]"
    assert "silently ignore" in error.message


def test_deny_filter_without_names_is_a_warning__newFilter() -> None:
    cfg = filtered(type="deny")
    accepted(cfg)
    assert where(yunikorn_rule_warnings(cfg)) == [(None, "extra.placementrules[0].filter")]


# --------------------------------------------------------------------------------------------
# placement rules: the fixed part of a chain against the queue tree
# --------------------------------------------------------------------------------------------


def test_placement_paths_of_configvalidator_test_accepted__checkPlacementRules() -> None:
    accepted(
        placement_tree(
            {
                "name": "user",
                "parent": {
                    "name": "tag",
                    "value": "namespace",
                    "parent": {"name": "fixed", "value": "root.users"},
                },
            },
            {
                "name": "fixed",
                "value": "dev",
                "create": True,
                "parent": {"name": "fixed", "value": "admins"},
            },
        )
    )


def test_fixed_rule_to_a_parent_queue_refused__checkPlacementRules() -> None:
    error = refused(placement_tree({"name": "fixed", "value": "root.users"}))
    assert error.field == "extra.placementrules[0].value"
    assert "root.users" in error.message
    assert "not a leaf queue" in error.message


def test_fixed_rule_to_a_missing_queue_without_create_refused__checkPlacementRules() -> None:
    rule = {"name": "fixed", "value": "dev", "parent": {"name": "fixed", "value": "admins"}}
    error = refused(placement_tree(rule))
    assert error.field == "extra.placementrules[0].value"
    assert "placement rule 0 (fixed->fixed) uses the queue path root.admins.dev" in error.message
    assert "create is false" in error.message


def test_fixed_rule_to_a_missing_queue_with_create_accepted__checkPlacementRules() -> None:
    accepted(placement_tree({"name": "fixed", "value": "root.devs.test", "create": True}))


def test_fixed_rule_below_a_leaf_queue_refused__checkPlacementRules() -> None:
    error = refused(placement_tree({"name": "fixed", "value": "root.default.leaf", "create": True}))
    assert "goes below root.default, a leaf queue" in error.message


def test_fixed_rule_to_an_existing_leaf_accepted__checkPlacementRules() -> None:
    accepted(placement_tree({"name": "fixed", "value": "root.default"}))


def test_dynamic_rule_below_a_leaf_refused__checkQueueHierarchyForPlacement() -> None:
    rule = {"name": "user", "create": True, "parent": {"name": "fixed", "value": "default"}}
    error = refused(placement_tree(rule))
    assert error.field == "extra.placementrules[0].parent.value"
    assert "(fixed->user)" in error.message
    assert "parent: true" in error.message


def test_dynamic_rule_below_unflagged_parent_refused__checkQueueHierarchyForPlacement() -> None:
    # YuniKorn's validator reads only the `parent` flag here.
    cfg = partition(
        queue("root.teams"),
        queue("root.teams.a"),
        placementrules=[{"name": "user", "parent": {"name": "fixed", "value": "teams"}}],
    )
    assert "parent: true" in refused(cfg).message


def test_fixed_rule_to_a_queue_with_children_refused__product() -> None:
    # YuniKorn's validator passes it (no parent flag), but the queue is a parent all the same.
    cfg = partition(
        queue("root.teams"),
        queue("root.teams.a"),
        placementrules=[{"name": "fixed", "value": "root.teams"}],
    )
    assert "not a leaf queue" in refused(cfg).message


def test_queue_names_compared_case_insensitively__product() -> None:
    accepted(placement_tree({"name": "user", "parent": {"name": "fixed", "value": "ADMINS"}}))


def test_chain_starting_dynamic_not_checked__getLongestPlacementPaths() -> None:
    accepted(placement_tree({"name": "fixed", "value": "anything", "parent": {"name": "user"}}))


# --------------------------------------------------------------------------------------------
# limits: one queue's list
# --------------------------------------------------------------------------------------------


def test_limits_within_the_queue_accepted__checkLimits() -> None:
    accepted(
        config(
            limits_on(
                "root.parent",
                user_limit("test-user", "*", maxresources={"memory": "100"}, maxapplications=100),
                group_limit("test-group", "*", maxresources={"memory": "100"}, maxapplications=100),
                maxapplications=100,
            )
        )
    )


def test_limit_without_users_or_groups_refused__checkLimit() -> None:
    error = refused(config(limits_on("root.a", {"users": [], "groups": [], "maxapplications": 1})))
    assert (error.queue, error.field) == ("root.a", "extra.limits[0]")
    assert "no users and no groups" in error.message


@pytest.mark.parametrize("name", ["sue", "_svc", "system:serviceaccount:ns:sa", "a.b@c/d#e$", "*"])
def test_limit_user_name_accepted__checkLimit(name: str) -> None:
    accepted(config(limits_on("root.a", user_limit(name, maxapplications=1))))


@pytest.mark.parametrize("name", ["1sue", "sue smith", "sue!", "", "a$b"])
def test_limit_user_name_refused__checkLimit(name: str) -> None:
    error = refused(config(limits_on("root.a", user_limit(name, maxapplications=1))))
    assert error.field == "extra.limits[0].users[0]"
    assert "not a valid user name" in error.message


@pytest.mark.parametrize("name", ["dev", "system:authenticated", "a.b-c_d", "*"])
def test_limit_group_name_accepted__checkLimit(name: str) -> None:
    cfg = config(
        limits_on(
            "root.a", group_limit("named", maxapplications=2), group_limit(name, maxapplications=1)
        )
    )
    accepted(cfg)


@pytest.mark.parametrize("name", ["group@name", "a/b", "dev$", "-dev"])
def test_limit_group_name_refused__checkLimit(name: str) -> None:
    error = refused(config(limits_on("root.a", group_limit(name, maxapplications=1))))
    assert error.field == "extra.limits[0].groups[0]"


def test_limit_duplicate_user_refused__checkLimit() -> None:
    error = refused(
        config(limits_on("root", user_limit("user1", "user2", "user1", maxapplications=1)))
    )
    assert (error.queue, error.field) == ("root", "extra.limits[0].users[2]")
    assert "already limited at extra.limits[0].users[0]" in error.message


def test_limit_duplicate_group_across_limits_refused__checkLimit() -> None:
    cfg = config(
        limits_on(
            "root.a", group_limit("dev", maxapplications=1), group_limit("dev", maxapplications=2)
        )
    )
    assert refused(cfg).field == "extra.limits[1].groups[0]"


def test_limit_user_after_wildcard_refused__checkLimit() -> None:
    cfg = config(
        limits_on(
            "root.parent",
            user_limit("*", "test-user", maxresources={"memory": "100"}),
            group_limit("test-group", "*", maxresources={"memory": "100"}),
        )
    )
    error = refused(cfg)
    assert error.field == "extra.limits[0].users[1]"
    assert "after the wildcard user" in error.message


def test_limit_group_after_wildcard_refused__checkLimit() -> None:
    cfg = config(
        limits_on(
            "root.parent",
            group_limit("g1", maxapplications=1),
            group_limit("*", maxapplications=1),
            group_limit("g2", maxapplications=1),
        )
    )
    assert refused(cfg).field == "extra.limits[2].groups[0]"


def test_limit_only_a_wildcard_group_refused__checkLimit() -> None:
    error = refused(config(limits_on("root.a", group_limit("*", maxapplications=100))))
    assert error.field == "extra.limits[0].groups[0]"
    assert "named group" in error.message


def test_limit_only_a_wildcard_user_accepted__checkLimit() -> None:
    accepted(config(limits_on("root.a", user_limit("*", maxapplications=3))))


def test_limit_partial_zero_resources_accepted__checkLimit() -> None:
    limit = user_limit(
        "u", maxapplications=1, maxresources={"memory": "100", "vcore": "0", "nvidia.com/gpu": 0}
    )
    accepted(config(limits_on("root.a", limit)))


def test_limit_with_zero_resources_refused__checkLimit() -> None:
    limit = user_limit("u", maxapplications=1, maxresources={"memory": "0", "vcore": "0"})
    error = refused(config(limits_on("root.a", limit)))
    assert error.field == "extra.limits[0].maxresources"
    assert "zero for every resource" in error.message


def test_limit_that_limits_nothing_refused__checkLimit() -> None:
    error = refused(config(limits_on("root.a", user_limit("u"))))
    assert error.field == "extra.limits[0]"
    assert "limits nothing" in error.message


@pytest.mark.parametrize("quantity", ["10Gi", "10 Gi", " 512M ", 100, "01", "1E", "7Ei"])
def test_limit_quantity_yunikorn_reads_accepted__ParseQuantity(quantity: object) -> None:
    accepted(config(limits_on("root.a", user_limit("u", maxresources={"memory": quantity}))))


@pytest.mark.parametrize("quantity", ["500m", "1", " 2 ", 4])
def test_limit_vcore_quantity_accepted__ParseVCore(quantity: object) -> None:
    accepted(config(limits_on("root.a", user_limit("u", maxresources={"vcore": quantity}))))


@pytest.mark.parametrize(
    "quantity",
    ["1.5Gi", "500m", "-1", "10K", "10Gb", "", None, True, 1.0, -5, "9223372036854775808", "8Ei"],
)
def test_limit_quantity_yunikorn_cannot_read_refused__ParseQuantity(quantity: object) -> None:
    error = refused(config(limits_on("root.a", user_limit("u", maxresources={"memory": quantity}))))
    assert error.field == "extra.limits[0].maxresources.memory"


def test_limit_vcore_overflow_refused__ParseVCore() -> None:
    limit = user_limit("u", maxresources={"vcore": "9223372036854775807"})
    assert refused(config(limits_on("root.a", limit))).field == "extra.limits[0].maxresources.vcore"


def test_limit_maxapplications_within_the_queue_accepted__checkLimit() -> None:
    cfg = config(limits_on("root.a", user_limit("u", maxapplications=100), maxapplications=100))
    accepted(cfg)


def test_limit_maxapplications_above_the_queue_refused__checkLimit() -> None:
    cfg = config(
        limits_on(
            "root.parent",
            user_limit("test-user", maxapplications=200),
            group_limit("test-group", maxapplications=100),
            maxapplications=100,
        )
    )
    error = refused(cfg)
    assert error.field == "extra.limits[0].maxapplications"
    assert "above the queue's own maxapplications 100" in error.message


def test_limit_maxresources_above_the_queue_max_refused__checkLimit() -> None:
    cfg = config(
        queue("root.parent", max={"memory": 100}, extra={"limits": [
            user_limit("test-user", maxresources={"memory": "100"}),
            group_limit("test-group", maxresources={"memory": "200", "vcore": "1000"}),
        ]}),
    )  # fmt: skip
    error = refused(cfg)
    assert error.field == "extra.limits[1].maxresources"
    assert "memory=200 is above the queue's max memory=100" in error.message


# --------------------------------------------------------------------------------------------
# limits: partition and root
# --------------------------------------------------------------------------------------------

USER_LIMIT = user_limit("test-user", maxapplications=100, maxresources={"memory": "100"})
GROUP_LIMIT = group_limit("test-group", maxresources={"memory": "100"})


def test_partition_limits_equal_to_root_accepted__checkLimitsStructure() -> None:
    accepted(partition(limits_on("root", USER_LIMIT), limits=[USER_LIMIT]))


def test_partition_limits_differing_from_root_refused__checkLimitsStructure() -> None:
    error = refused(partition(limits_on("root", USER_LIMIT), limits=[GROUP_LIMIT]))
    assert (error.queue, error.field) == (None, "extra.limits")
    assert "differs from the root queue's limits" in error.message


def test_partition_limits_apply_to_root__checkLimitsStructure() -> None:
    root = queue("root", extra={"maxapplications": 50})
    error = refused(
        partition(root, queue("root.a", extra={"maxapplications": 5}), limits=[USER_LIMIT])
    )
    assert (error.queue, error.field) == (None, "extra.limits[0].maxapplications")
    assert "above the queue's own maxapplications 50" in error.message


def test_partition_limits_bound_the_queues_below_root__checkLimitResource() -> None:
    child = limits_on(
        "root.a", user_limit("test-user", maxapplications=50, maxresources={"memory": "200"})
    )
    error = refused(partition(child, limits=[USER_LIMIT]))
    assert (error.queue, error.field) == ("root.a", "extra.limits[0].maxresources")


# --------------------------------------------------------------------------------------------
# limits: between queues
# --------------------------------------------------------------------------------------------


def res_limits(users: dict[str, str], groups: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``createLimitMaxResources``: one limit per name, memory only."""
    limits = [user_limit(name, maxresources={"memory": memory}) for name, memory in users.items()]
    limits += [
        group_limit(name, maxresources={"memory": memory})
        for name, memory in (groups or {}).items()
    ]
    return limits


def app_limits(users: dict[str, int], groups: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """``createLimitMaxApplications``: one limit per name."""
    limits = [user_limit(name, maxapplications=apps) for name, apps in users.items()]
    limits += [group_limit(name, maxapplications=apps) for name, apps in (groups or {}).items()]
    return limits


def tree_with_limits(**limits: list[dict[str, Any]]) -> PartitionConfig:
    """Queues given by path with underscores for dots: ``root_parent_child1=[...]``."""
    return config(
        *(queue(path.replace("_", "."), extra={"limits": items}) for path, items in limits.items())
    )


def test_limit_resources_within_parent_and_ancestors_accepted__checkLimitResource() -> None:
    accepted(
        tree_with_limits(
            root_p=res_limits({"test-user": "100", "*": "100"}, {"test-group": "100", "*": "100"}),
            root_p_c1=res_limits(
                {"test-user": "50", "test-user2": "50"}, {"test-group": "50", "test-group2": "50"}
            ),
            root_p_c1_c2=res_limits(
                {"test-user": "10", "test-user2": "10"}, {"test-group": "10", "test-group2": "10"}
            ),
        )
    )


def test_limit_resources_of_siblings_are_independent__checkLimitResource() -> None:
    accepted(
        tree_with_limits(
            root_p=res_limits({"test-user": "100"}, {"test-group": "100"}),
            root_p_c1=res_limits({"test-user": "50"}, {"test-group": "50"}),
            root_p_c2=res_limits({"test-user": "60"}, {"test-group": "60"}),
        )
    )


def test_limit_user_resources_above_parent_refused__checkLimitResource() -> None:
    error = refused(
        tree_with_limits(
            root_p=res_limits({"test-user": "100"}, {"test-group": "100"}),
            root_p_c1=res_limits({"test-user": "200"}, {"test-group": "50"}),
        )
    )
    assert (error.queue, error.field) == ("root.p.c1", "extra.limits[0].maxresources")
    assert (
        "user 'test-user': memory=200 is above the limit for user 'test-user' on root.p"
        in error.message
    )


def test_limit_group_resources_above_grandparent_refused__checkLimitResource() -> None:
    error = refused(
        tree_with_limits(
            root_p=res_limits({}, {"test-group1": "100", "test-group2": "100"}),
            root_p_c1=res_limits({}, {"test-group1": "50"}),
            root_p_c1_c2=res_limits({}, {"test-group1": "10", "test-group2": "150"}),
        )
    )
    assert (error.queue, error.field) == ("root.p.c1.c2", "extra.limits[1].maxresources")


def test_limit_user_resources_above_parent_wildcard_refused__checkLimitResource() -> None:
    error = refused(
        tree_with_limits(
            root_p=res_limits({"test-user1": "100", "*": "100"}),
            root_p_c1=res_limits({"test-user1": "50", "test-user2": "150"}),
        )
    )
    assert error.field == "extra.limits[1].maxresources"
    assert "the wildcard user '*' on root.p" in error.message


def test_limit_wildcard_resources_above_parent_wildcard_refused__checkLimitResource() -> None:
    error = refused(
        tree_with_limits(
            root_p=res_limits({"*": "100"}),
            root_p_c1=res_limits({"*": "100"}),
            root_p_c1_c2=res_limits({"*": "150"}),
        )
    )
    assert error.queue == "root.p.c1.c2"


def test_limit_applications_within_ancestors_accepted__checkLimitMaxApplications() -> None:
    accepted(
        tree_with_limits(
            root_p=app_limits({"test-user": 100, "*": 100}, {"test-group": 100, "*": 100}),
            root_p_c1=app_limits(
                {"test-user": 100, "test-user2": 100}, {"test-group": 100, "test-group2": 100}
            ),
            root_p_c1_a=app_limits({"*": 10}),
            root_p_c1_b=app_limits({"test-user": 50}, {"test-group": 50}),
        )
    )


def test_limit_user_applications_above_parent_refused__checkLimitMaxApplications() -> None:
    error = refused(
        tree_with_limits(
            root_p=app_limits({"test-user": 100}, {"test-group": 100}),
            root_p_c1=app_limits({"test-user": 200}, {"test-group": 50}),
        )
    )
    assert (error.queue, error.field) == ("root.p.c1", "extra.limits[0].maxapplications")
    assert (
        "maxapplications 200 is above the limit of 100 for user 'test-user' on root.p"
        in error.message
    )


def test_limit_group_apps_above_grandparent_wildcard_refused__checkLimitMaxApplications() -> None:
    error = refused(
        tree_with_limits(
            root_p=app_limits({}, {"test-group1": 100, "*": 100}),
            root_p_c1=app_limits({}, {"test-group1": 50}),
            root_p_c1_c2=app_limits({}, {"test-group1": 10, "test-group2": 150}),
        )
    )
    assert (error.queue, error.field) == ("root.p.c1.c2", "extra.limits[1].maxapplications")


def test_limit_without_apps_below_one_with_apps_refused__checkLimitMaxApplications() -> None:
    # 0 means unlimited, which is above the ancestor's limit.
    error = refused(
        tree_with_limits(
            root_p=app_limits({"test-user": 10}),
            root_p_c1=res_limits({"test-user": "100"}),
        )
    )
    assert error.field == "extra.limits[0].maxapplications"
    assert "unlimited (0)" in error.message


# --------------------------------------------------------------------------------------------
# ACLs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "acl",
    ["", "*", "ops", "ops ops-admins", "john,bob", " ops-admins,dev", "sue,bob.smith@corp dev_1",
     "ops ", "* admins", "admin$ *"],
)  # fmt: skip
def test_acl_accepted__checkACL_NewACL(acl: str) -> None:
    accepted(config(queue("root.a", extra={"adminacl": acl, "submitacl": acl})))


def test_acl_with_three_fields_refused__checkACL() -> None:
    error = refused(config(queue("root.a", extra={"adminacl": "admin group extra"})))
    assert (error.queue, error.field) == ("root.a", "extra.adminacl")
    assert "3 space-separated parts" in error.message


@pytest.mark.parametrize("acl", ["ops  admins", " * ", "  admins"])
def test_acl_with_extra_spaces_refused__NewACL_product(acl: str) -> None:
    # YuniKorn's validator trims and collapses blanks, but the queue's ACL splits on each space
    # and the queue then fails to apply.
    assert (
        "space-separated parts"
        in refused(config(queue("root.a", extra={"submitacl": acl}))).message
    )


@pytest.mark.parametrize(
    ("acl", "bad"),
    [
        ("system:serviceaccount:ns:sa", "'system:serviceaccount:ns:sa'"),
        ("ops team.a", "'team.a'"),
        ("*,bob", "'*' must be the whole user list"),
        ("bob,,sue", "empty entry"),
        ("bob sre,*", "'*' must be the whole group list"),
        ("1bob", "'1bob'"),
    ],
)
def test_acl_name_yunikorn_ignores_refused__NewACL_product(acl: str, bad: str) -> None:
    error = refused(config(queue("root.a", extra={"submitacl": acl})))
    assert error.field == "extra.submitacl"
    assert bad in error.message


def test_acl_not_text_refused__strict_decoder() -> None:
    errors = yunikorn_rule_errors(
        config(queue("root.a", extra={"adminacl": ["ops"], "submitacl": 5}))
    )
    assert where(errors) == [("root.a", "extra.adminacl"), ("root.a", "extra.submitacl")]


# --------------------------------------------------------------------------------------------
# node sort policy and user group resolver
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [
        {"type": "fair", "resourceweights": {"memory": 1.0}},
        {"type": "binpacking", "resourceweights": {"memory": 2.0, "vcore": 3, "nvidia.com/gpu": 0}},
        {"type": ""},
        {},
    ],
)
def test_node_sort_policy_accepted__checkNodeSortingPolicy(policy: dict[str, Any]) -> None:
    accepted(partition(nodesortpolicy=policy))


def test_node_sort_policy_invalid_type_refused__checkNodeSortingPolicy() -> None:
    error = refused(partition(nodesortpolicy={"type": "invalid"}))
    assert (error.queue, error.field) == (None, "extra.nodesortpolicy.type")
    assert "use fair or binpacking" in error.message


def test_node_sort_policy_type_is_case_sensitive__SortingPolicyFromString() -> None:
    assert "write 'binpacking'" in refused(partition(nodesortpolicy={"type": "BinPacking"})).message


def test_node_sort_policy_as_a_plain_value_refused__strict_decoder() -> None:
    # The queue_config page shows `nodesortpolicy: fair`; the strict decoder refuses it.
    error = refused(partition(nodesortpolicy="fair"))
    assert error.field == "extra.nodesortpolicy"
    assert "{type: fair}" in error.message


@pytest.mark.parametrize("weight", [-1.0, "1", True, None, float("nan"), float("inf")])
def test_node_sort_weight_negative_or_not_a_number_refused__checkNodeSortingPolicy(
    weight: object,
) -> None:
    error = refused(
        partition(nodesortpolicy={"type": "fair", "resourceweights": {"memory": weight}})
    )
    assert error.field == "extra.nodesortpolicy.resourceweights.memory"


@pytest.mark.parametrize("kind", ["", "os", "ldap", None])
def test_user_group_resolver_accepted__GetUserGroupCache(kind: str | None) -> None:
    cfg = partition(usergroupresolver={"type": kind})
    accepted(cfg)
    assert yunikorn_rule_warnings(cfg) == []


def test_user_group_resolver_unknown_type_is_a_warning__GetUserGroupCache() -> None:
    cfg = partition(usergroupresolver={"type": "LDAP"})
    accepted(cfg)
    warning = only_error(yunikorn_rule_warnings(cfg))
    assert warning.field == "extra.usergroupresolver.type"
    assert "write 'ldap'" in warning.message


def test_user_group_resolver_type_not_text_refused__strict_decoder() -> None:
    assert refused(partition(usergroupresolver={"type": {"ldap": True}})).field == (
        "extra.usergroupresolver.type"
    )


# --------------------------------------------------------------------------------------------
# child templates
# --------------------------------------------------------------------------------------------


def templated(template: object, **extra: Any) -> PartitionConfig:
    return config(queue("root.p", extra={"parent": True, "childtemplate": template, **extra}))


def test_child_template_accepted__template_FromConf() -> None:
    template = {
        "maxapplications": 10,
        "properties": {"application.sort.policy": "fair", "priority.offset": 5, "custom": "x"},
        "resources": {
            "guaranteed": {"vcore": 1, "memory": "1G"},
            "max": {"vcore": "20", "memory": "600 G"},
        },
    }
    accepted(templated(template))


@pytest.mark.parametrize(
    ("template", "field"),
    [
        ({"maxapplications": -1}, "extra.childtemplate.maxapplications"),
        ({"properties": {"a": True}}, "extra.childtemplate.properties.a"),
        ({"properties": ["a"]}, "extra.childtemplate.properties"),
        ({"resources": {"max": {"memory": "1.5G"}}}, "extra.childtemplate.resources.max.memory"),
        (
            {"resources": {"guaranteed": {"memory": "10Gib"}}},
            "extra.childtemplate.resources.guaranteed.memory",
        ),
        ({"resources": "8Gi"}, "extra.childtemplate.resources"),
        (5, "extra.childtemplate"),
    ],
)
def test_child_template_wrong_types_refused__strict_decoder_ParseQuantity(
    template: object, field: str
) -> None:
    error = refused(templated(template))
    assert (error.queue, error.field) == ("root.p", field)


def test_child_template_guaranteed_above_max_refused__product() -> None:
    error = refused(
        templated({"resources": {"guaranteed": {"memory": "2G"}, "max": {"memory": "1G"}}})
    )
    assert error.field == "extra.childtemplate.resources.guaranteed.memory"
    assert "above the template's max memory=1G" in error.message


def test_child_template_known_property_values_checked__UpdateQueueProperties() -> None:
    template = {"properties": {"application.sort.policy": "FAIR", "priority.offset": "high"}}
    errors = yunikorn_rule_errors(templated(template))
    assert where(errors) == [
        ("root.p", "extra.childtemplate.properties.application.sort.policy"),
        ("root.p", "extra.childtemplate.properties.priority.offset"),
    ]


def test_child_template_on_a_leaf_is_a_warning__applyConf() -> None:
    cfg = config(queue("root.leaf", extra={"childtemplate": {"maxapplications": 3}}))
    accepted(cfg)
    assert where(yunikorn_rule_warnings(cfg)) == [("root.leaf", "extra.childtemplate")]


def test_child_template_on_a_queue_with_children_is_no_warning__applyConf() -> None:
    cfg = config(
        queue("root.p", extra={"childtemplate": {"maxapplications": 3}}), queue("root.p.c")
    )
    assert yunikorn_rule_warnings(cfg) == []


# --------------------------------------------------------------------------------------------
# maxapplications between queues
# --------------------------------------------------------------------------------------------


def max_apps_tree(root: int, parent: int, parent1: int, child1: int) -> PartitionConfig:
    """``createQueueWithMaxApplication``: root > parent > parent1 > child1."""
    return config(
        queue("root", extra={"maxapplications": root}),
        queue("root.parent", extra={"maxapplications": parent}),
        queue("root.parent.parent1", extra={"maxapplications": parent1}),
        queue("root.parent.parent1.child1", extra={"maxapplications": child1}),
    )


@pytest.mark.parametrize("values", [(4, 3, 2, 1), (0, 3, 2, 1), (0, 0, 0, 0), (5, 5, 5, 5)])
def test_max_applications_not_above_parent_accepted__checkQueueMaxApplications(
    values: tuple[int, int, int, int],
) -> None:
    accepted(max_apps_tree(*values))


def test_child_max_applications_above_parent_refused__checkQueueMaxApplications() -> None:
    errors = yunikorn_rule_errors(max_apps_tree(1, 2, 3, 4))
    assert where(errors) == [
        ("root.parent", "extra.maxapplications"),
        ("root.parent.parent1", "extra.maxapplications"),
        ("root.parent.parent1.child1", "extra.maxapplications"),
    ]
    assert "2 is above the parent queue's (root) maxapplications 1" in errors[0].message


def test_child_without_max_applications_refused__checkQueueMaxApplications() -> None:
    error = refused(max_apps_tree(4, 3, 2, 0))
    assert (error.queue, error.field) == ("root.parent.parent1.child1", "extra.maxapplications")
    assert "must be set" in error.message


def test_max_applications_on_root_is_a_warning__applyConf() -> None:
    cfg = max_apps_tree(4, 3, 2, 1)
    assert where(yunikorn_rule_warnings(cfg)) == [("root", "extra.maxapplications")]


# --------------------------------------------------------------------------------------------
# recognised property values
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("application.sort.policy", "fifo"),
        ("application.sort.policy", "fair"),
        ("application.sort.policy", ""),
        ("application.sort.priority", "enabled"),
        ("application.sort.priority", "Disabled"),
        ("priority.policy", "default"),
        ("priority.policy", "FENCE"),
        ("priority.policy", ""),
        ("priority.offset", "-2147483648"),
        ("priority.offset", "+2147483647"),
        ("priority.offset", "007"),
        ("application.unschedasks.backoff", "0"),
        ("application.unschedasks.backoff", "18446744073709551615"),
    ],
)
def test_property_value_accepted__UpdateQueueProperties(key: str, value: str) -> None:
    accepted(config(queue("root.a", properties={key: value})))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("application.sort.policy", "FAIR"),
        ("application.sort.policy", "priority"),
        ("application.sort.policy", " fifo"),
        ("application.sort.priority", "yes"),
        ("application.sort.priority", ""),
        ("priority.policy", "strict"),
        ("priority.offset", "2147483648"),
        ("priority.offset", "1.5"),
        ("priority.offset", " 1"),
        ("priority.offset", "1_000"),
        ("priority.offset", "9" * 5000),
        ("application.unschedasks.backoff", "-1"),
        ("application.unschedasks.backoff", "+1"),
        ("application.unschedasks.backoff", "18446744073709551616"),
    ],
)
def test_property_value_refused__UpdateQueueProperties(key: str, value: str) -> None:
    error = refused(config(queue("root.a", properties={key: value})))
    assert (error.queue, error.field) == ("root.a", f"properties.{key}")
    assert len(error.message) < 250


def test_sort_policy_in_upper_case_refused_with_a_hint__SortPolicyFromString() -> None:
    message = refused(
        config(queue("root.a", properties={"application.sort.policy": "FAIR"}))
    ).message
    assert "'FAIR'" in message
    assert "write 'fair'" in message


def test_stateaware_accepted_with_a_deprecation_warning__SortPolicyFromString() -> None:
    cfg = config(queue("root.a", properties={"application.sort.policy": "stateaware"}))
    accepted(cfg)
    warning = only_error(yunikorn_rule_warnings(cfg))
    assert (warning.queue, warning.field) == ("root.a", "properties.application.sort.policy")
    assert "deprecated" in warning.message


def test_duration_and_preemption_properties_are_left_to_hierarchy() -> None:
    properties = {
        "preemption.delay": "soon",
        "quota.preemption.delay": "-1",
        "application.unschedasks.backoff.delay": "x",
        "preemption.policy": "bogus",
    }
    accepted(config(queue("root.a", properties=properties)))


# --------------------------------------------------------------------------------------------
# every error at once, and hostile data
# --------------------------------------------------------------------------------------------


def test_every_violation_reported_at_once() -> None:
    cfg = partition(
        queue(
            "root.a",
            extra={"adminacl": "a b c", "maxapplications": -1},
            properties={"priority.offset": "x"},
        ),
        placementrules=[
            {"name": "user", "create": "bogus"},
            {"name": "tag", "filter": {"type": "bogus"}},
        ],
        nodesortpolicy={"type": "invalid"},
        limits=[{"users": ["bad name"], "maxresources": {"memory": "0"}}],
    )
    assert sorted(where(yunikorn_rule_errors(cfg)), key=str) == sorted(
        [
            (None, "extra.placementrules[0].create"),
            (None, "extra.placementrules[1].value"),
            (None, "extra.placementrules[1].filter.type"),
            (None, "extra.limits[0].users[0]"),
            (None, "extra.limits[0].maxresources"),
            (None, "extra.nodesortpolicy.type"),
            ("root.a", "extra.adminacl"),
            ("root.a", "extra.maxapplications"),
            ("root.a", "properties.priority.offset"),
        ],
        key=str,
    )


def test_locations_name_the_partition_or_the_queue() -> None:
    cfg = partition(
        queue("root.a", extra={"maxapplications": -1}),
        placementrules=[{"name": "user", "create": "bogus"}],
    )
    assert [error.location for error in yunikorn_rule_errors(cfg)] == [
        "partition.extra.placementrules[0].create",
        "queues[root.a].extra.maxapplications",
    ]


HOSTILE = [
    None, True, -1, 2**70, 10**5000, 1.5, float("nan"), "", "x" * 100_000, "\x00", "\ud800",
    [], [None], [[[]]], {}, {"": None}, {1: 2}, {"name": {"name": []}}, ("tuple",), object(),
]  # fmt: skip


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_values_never_raise(value: object) -> None:
    nested = {
        "name": value,
        "create": value,
        "value": value,
        "filter": {"type": value, "users": value, "groups": [value]},
        "parent": {"name": "fixed", "value": value, "parent": value},
    }
    limit = {"users": [value], "groups": value, "maxresources": {"memory": value, "vcore": value}}
    template = {
        "maxapplications": value,
        "properties": {"priority.offset": value},
        "resources": {"max": value},
    }
    cfg = partition(
        queue(
            "root.a",
            extra=dict.fromkeys(
                ("parent", "maxapplications", "adminacl", "submitacl", "childtemplate", "limits"),
                value,
            ),
        ),
        queue(
            "root.b", extra={"limits": [limit, value], "childtemplate": template, "parent": True}
        ),
        queue("root.b.c", extra={"limits": [limit]}, properties={"priority.offset": value}),
        placementrules=[value, nested],
        limits=[limit],
        nodesortpolicy={"type": value, "resourceweights": {"memory": value}},
        usergroupresolver={"type": value},
    )
    for error in [*yunikorn_rule_errors(cfg), *yunikorn_rule_warnings(cfg)]:
        assert len(error.message) < 1000
        str(error)


def test_hostile_whole_extras_never_raise() -> None:
    for value in HOSTILE:
        cfg = PartitionConfig(
            settings=PartitionSettings(name="default", extra=value),  # type: ignore[arg-type]
            queues=(QueueConfig(path="root", parent=None, name="root", extra=value),),  # type: ignore[arg-type]
        )
        yunikorn_rule_errors(cfg)
        yunikorn_rule_warnings(cfg)


def test_deep_parent_rule_chain_refused_without_recursion() -> None:
    rule: dict[str, Any] = {"name": "user"}
    for _ in range(5000):
        rule = {"name": "user", "parent": rule}
    error = refused(placement_tree(rule))
    assert "nested parent rules" in error.message


def test_deeply_nested_expression_does_not_raise() -> None:
    expression = "(" * 3000 + "a" + ")" * 3000
    error = refused(filtered(users=[expression[:1024]]))
    assert error.field == "extra.placementrules[0].filter.users[0]"
    refused(filtered(users=[expression]))


def test_broken_tree_does_not_raise() -> None:
    cfg = PartitionConfig(
        settings=config().settings,
        queues=(
            QueueConfig(path="root.a", parent="root.b", name="a", extra={"maxapplications": 3}),
            QueueConfig(
                path="root.b",
                parent="root.a",
                name="b",
                extra={"limits": [user_limit("u", maxapplications=1)]},
            ),
        ),
    )
    yunikorn_rule_errors(cfg)
