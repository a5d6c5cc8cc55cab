"""YuniKorn's own placement tests, translated (``preemption.placement``).

Each test names the yunikorn-core test it comes from (``pkg/scheduler/placement/<file>``,
``<TestName>``); the queue structures, applications and expected queues are theirs. Where
yunikorn-core checks a Go detail we do not have (a rule object's private fields), the test checks
the same thing through what the rule shows (``describe``, YuniKorn's ``RuleDAO``) or does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from preemption.placement import (
    RECOVERY_QUEUE,
    Application,
    Filter,
    PlacementConfigError,
    PlacementError,
    Placer,
    QueueTree,
    UserGroup,
    build_rule,
    build_rules,
    replace_dot,
)

# testrule_test.go: confParentChild, nameParentChild, confTestQueue
CONF_PARENT_CHILD = """
partitions:
  - name: default
    queues:
      - name: testchild
      - name: testparent
        parent: true
"""
NAME_PARENT_CHILD = "root.testparentnew.testchild"
CONF_TEST_QUEUE = """
partitions:
  - name: default
    queues:
      - name: testqueue
      - name: testparent
        queues:
          - name: testchild
"""


def config_queues(text: str) -> list[dict[str, Any]]:
    """The product's config JSON ``queues`` for a ``queues.yaml`` (first partition; several
    top-level queues sit under an implicit root, as YuniKorn reads them)."""
    top = yaml.safe_load(text)["partitions"][0]["queues"]
    if not (len(top) == 1 and str(top[0]["name"]).lower() == "root"):
        top = [{"name": "root", "queues": top}]
    items: list[dict[str, Any]] = []

    def walk(queue: Mapping[str, Any], parent: str | None) -> None:
        path = f"{parent}.{queue['name']}" if parent else str(queue["name"])
        extra = {k: queue[k] for k in ("parent", "submitacl", "adminacl", "childtemplate")
                 if k in queue}  # fmt: skip
        items.append({"path": path, "parent": parent, "extra": extra})
        for child in queue.get("queues") or []:
            walk(child, path)

    walk(top[0], None)
    return items


def tree(text: str) -> QueueTree:
    return QueueTree.from_config(config_queues(text))


def app(
    queue: str = "",
    user: str = "test",
    groups: tuple[str, ...] = (),
    tags: Mapping[str, str] | None = None,
    forced: bool = False,
) -> Application:
    return Application("app1", queue, UserGroup(user, groups), dict(tags or {}), forced)


def place(rule: Mapping[str, Any], application: Application, queues: QueueTree) -> str:
    return build_rule(rule).place(application, queues)


# --- rule_test.go ---------------------------------------------------------------------------


def test_new_rule() -> None:
    """rule_test.go TestNewRule: unknown and recovery names fail; names are case-insensitive."""
    with pytest.raises(PlacementConfigError):
        build_rule({"name": "bogus"})
    with pytest.raises(PlacementConfigError):
        build_rule({"name": "recovery"})
    assert build_rule({"name": "TeSt"}).name == "test"
    assert build_rule({"name": "user", "parent": {"name": "test"}}).parent is not None


def test_place_app_test_rule() -> None:
    """rule_test.go TestPlaceApp (the test rule through the manager's rule interface)."""
    queues = tree(CONF_TEST_QUEUE)
    assert place({"name": "test"}, app(), queues) == "test"
    assert place({"name": "test"}, app("root.a.b"), queues) == "root_dot_a_dot_b"
    with pytest.raises(PlacementError):
        place({"name": "test"}, app("root.a!b"), queues)


def test_replace_dot() -> None:
    """rule_test.go TestReplaceDot."""
    assert replace_dot("name.name") == "name_dot_name"
    assert replace_dot("name.name.name") == "name_dot_name_dot_name"
    assert replace_dot(".name.") == "_dot_name_dot_"
    assert replace_dot("name") == "name"


def test_basic_rule() -> None:
    """rule_test.go TestBasicRule: a rule without parent has none; its description names it."""
    rule = build_rule({"name": "user"})
    assert rule.parent is None
    assert rule.describe() == {"name": "user", "parameters": {"create": "false"}}


# --- recovery_rule_test.go ------------------------------------------------------------------


def test_recovery_rule() -> None:
    """recovery_rule_test.go TestRecoveryRuleInitialise, TestRecoveryRulePlace,
    Test_recoveryRule_ruleDAO."""
    recovery = build_rules(None)[-1]
    queues = tree(CONF_TEST_QUEUE)
    assert recovery.place(app("root.testqueue"), queues) == ""
    assert recovery.place(app("root.testqueue", forced=True), queues) == RECOVERY_QUEUE
    assert recovery.describe() == {"name": "recovery", "parameters": {"queue": RECOVERY_QUEUE}}


# --- testrule_test.go -----------------------------------------------------------------------


def test_test_rule_place() -> None:
    """testrule_test.go TestTestRulePlace."""
    queues = tree(CONF_TEST_QUEUE)
    assert place({"name": "test"}, app(), queues) == "test"
    assert place({"name": "test"}, app("testqueue"), queues) == "testqueue"
    assert place({"name": "test"}, app("root.testqueue"), queues) == "root_dot_testqueue"


# --- provided_rule_test.go ------------------------------------------------------------------


def test_provided_rule_place() -> None:
    """provided_rule_test.go TestProvidedRulePlace."""
    queues = tree(
        """
partitions:
  - name: default
    queues:
      - name: testparent
        queues:
          - name: testchild
"""
    )
    provided = {"name": "provided"}
    assert place(provided, app("unknown"), queues) == ""  # does not exist under root
    assert place(provided, app(""), queues) == ""  # no queue provided
    assert place(provided, app("root.unknown"), queues) == ""  # qualified, does not exist
    created = {"name": "provided", "create": True}
    assert place(created, app("root.unknown"), queues) == "root.unknown"
    with pytest.raises(PlacementError):
        place(created, app("root.unkno!wn"), queues)
    with_parent = {"name": "provided", "parent": {"name": "fixed", "value": "testparent"}}
    assert place(with_parent, app("testchild"), queues) == "root.testparent.testchild"
    # qualified queue with a parent rule: the parent rule is ignored
    assert place(with_parent, app("root.testparent"), queues) == "root.testparent"
    with pytest.raises(PlacementError):
        place(with_parent, app("root.testp!arent"), queues)
    deny = {"name": "provided", "filter": {"type": "deny"}}
    assert place(deny, app("testchild"), queues) == ""


def test_provided_rule_parent() -> None:
    """provided_rule_test.go TestProvidedRuleParent."""
    queues = tree(CONF_PARENT_CHILD)

    def rule(create: bool, parent: dict[str, Any]) -> dict[str, Any]:
        return {"name": "provided", "create": create, "parent": parent}

    fixed = {"name": "fixed", "value": "testparent"}
    assert place(rule(False, fixed), app("unknown"), queues) == ""
    other = {"name": "fixed", "value": "testother", "create": False}
    assert place(rule(True, other), app("testchild"), queues) == ""
    new = {"name": "fixed", "value": "testparentnew", "create": True}
    assert place(rule(True, new), app("testchild"), queues) == NAME_PARENT_CHILD
    with pytest.raises(PlacementError):
        place(rule(True, new), app("testc!hild"), queues)
    leaf = {"name": "fixed", "value": "testchild"}
    with pytest.raises(PlacementError, match="leaf"):
        place(rule(True, leaf), app("unknown"), queues)
    failing = {"name": "fixed", "value": "testchild", "parent": leaf}
    with pytest.raises(PlacementError):
        place(rule(True, failing), app("unknown"), queues)
    no_prefix = {"name": "provided", "create": True, "parent": {"name": "fixed", "value": "root"}}
    assert place(rule(True, no_prefix), app("unknown"), queues) == "root.root.unknown.unknown"


def test_provided_rule_dao() -> None:
    """provided_rule_test.go Test_providedRule_ruleDAO."""
    assert build_rule({"name": "provided"}).describe() == {
        "name": "provided",
        "parameters": {"create": "false"},
    }
    parent = build_rule({"name": "provided", "create": True, "parent": {"name": "test"}})
    assert parent.describe() == {
        "name": "provided",
        "parameters": {"create": "true"},
        "parentRule": {"name": "test", "parameters": {"create": "false"}},
    }
    filtered = build_rule({"name": "provided", "filter": {"type": "allow", "users": ["u1", "u2"]}})
    assert filtered.describe()["filter"] == {"type": "allow", "userList": ["u1", "u2"]}


# --- fixed_rule_test.go ---------------------------------------------------------------------


def test_fixed_rule() -> None:
    """fixed_rule_test.go TestFixedRule."""
    with pytest.raises(PlacementConfigError):
        build_rule({"name": "fixed"})
    assert build_rule({"name": "fixed", "value": "testqueue"}).name == "fixed"
    with pytest.raises(PlacementConfigError):
        build_rule(
            {
                "name": "fixed",
                "value": "root.testchild",
                "parent": {"name": "fixed", "value": "testparent"},
            }
        )


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"name": "fixed", "value": "testqueue"}, "root.testqueue"),
        ({"name": "fixed", "value": "testparent.testchild"}, "root.testparent.testchild"),
        ({"name": "fixed", "value": "newqueue", "create": True}, "root.newqueue"),
        # placing in a parent does not fail in the rule: the manager passes it over
        ({"name": "fixed", "value": "root.testparent"}, "root.testparent"),
        (
            {
                "name": "fixed",
                "value": "testchild",
                "parent": {"name": "fixed", "value": "testparent"},
            },
            "root.testparent.testchild",
        ),
        ({"name": "fixed", "value": "testchild", "filter": {"type": "deny"}}, ""),
    ],
)
def test_fixed_rule_place(rule: dict[str, Any], expected: str) -> None:
    """fixed_rule_test.go TestFixedRulePlace (the placing cases)."""
    assert place(rule, app("ignored", user="testuser"), tree(CONF_TEST_QUEUE)) == expected


@pytest.mark.parametrize(
    "value", ["testqueue!>invalid<", "root.testparent!>invalid<test.testqueue"]
)
def test_fixed_rule_invalid_names(value: str) -> None:
    """fixed_rule_test.go TestFixedRulePlace (the invalid names: the rule cannot be built)."""
    with pytest.raises(PlacementConfigError):
        build_rule({"name": "fixed", "value": value})


def test_fixed_rule_parent() -> None:
    """fixed_rule_test.go TestFixedRuleParent."""
    queues = tree(CONF_PARENT_CHILD)
    user = app("ignored", user="testuser")

    def rule(value: str, create: bool, parent: dict[str, Any]) -> dict[str, Any]:
        return {"name": "fixed", "value": value, "create": create, "parent": parent}

    assert (
        place(rule("nonexist", False, {"name": "fixed", "value": "testparent"}), user, queues) == ""
    )
    other = {"name": "fixed", "value": "testparentnew", "create": False}
    assert place(rule("testchild", True, other), user, queues) == ""
    new = {"name": "fixed", "value": "testparentnew", "create": True}
    assert place(rule("testchild", True, new), user, queues) == NAME_PARENT_CHILD
    with pytest.raises(PlacementConfigError):
        build_rule(rule("testchild", True, {"name": "fixed", "value": "test!invalid<tes>t"}))
    leaf = {"name": "fixed", "value": "testchild"}
    with pytest.raises(PlacementError, match="leaf"):
        place(rule("nonexist", True, leaf), user, queues)
    with pytest.raises(PlacementError):
        place(rule("testchild", False, {**leaf, "parent": leaf}), user, queues)
    root = {"name": "fixed", "value": "root"}
    assert place(rule("testchild", True, root), user, queues) == "root.root.testchild"


def test_fixed_rule_dao() -> None:
    """fixed_rule_test.go Test_fixedRule_ruleDAO."""
    base = build_rule({"name": "fixed", "value": "default"}).describe()
    assert base == {
        "name": "fixed",
        "parameters": {"queue": "default", "qualified": "false", "create": "false"},
    }
    qualified = build_rule({"name": "fixed", "value": "root.default"}).describe()
    assert qualified["parameters"]["qualified"] == "true"
    parent = build_rule(
        {
            "name": "fixed",
            "value": "default",
            "create": True,
            "parent": {"name": "test", "create": True},
        }
    ).describe()
    assert parent["parentRule"] == {"name": "test", "parameters": {"create": "true"}}
    filtered = build_rule(
        {"name": "fixed", "value": "default", "create": True,
         "filter": {"type": "allow", "groups": ["group2", "group1"]}}
    ).describe()  # fmt: skip
    assert filtered["filter"] == {"type": "allow", "groupList": ["group1", "group2"]}


# --- tag_rule_test.go -----------------------------------------------------------------------


def test_tag_rule() -> None:
    """tag_rule_test.go TestTagRule."""
    with pytest.raises(PlacementConfigError):
        build_rule({"name": "tag"})
    assert build_rule({"name": "tag", "value": "label1"}).name == "tag"
    chained = build_rule(
        {"name": "tag", "value": "label1", "parent": {"name": "tag", "value": "label2"}}
    )
    assert chained.parent is not None


def test_tag_rule_place() -> None:
    """tag_rule_test.go TestTagRulePlace."""
    queues = tree(CONF_TEST_QUEUE)
    rule = {"name": "tag", "value": "label1"}

    def with_tags(**tags: str) -> Application:
        return app("ignored", user="testuser", tags=tags)

    assert place(rule, with_tags(), queues) == ""
    assert place(rule, with_tags(label1="testqueue"), queues) == "root.testqueue"
    with pytest.raises(PlacementError):
        place(rule, with_tags(label1="test!queue"), queues)
    assert place(rule, with_tags(label1="unknown"), queues) == ""
    qualified = with_tags(label1="root.testparent.testchild")
    assert place(rule, qualified, queues) == "root.testparent.testchild"
    with pytest.raises(PlacementError):
        place(rule, with_tags(label1="root.testparent.test!child"), queues)
    assert place(rule, with_tags(label1=RECOVERY_QUEUE), queues) == ""
    chained = {**rule, "parent": {"name": "tag", "value": "label2"}}
    assert place(chained, with_tags(label1="testchild"), queues) == ""
    both = with_tags(label1="testchild", label2="testparent")
    assert place(chained, both, queues) == "root.testparent.testchild"
    with pytest.raises(PlacementError):
        place(chained, with_tags(label1="testchild", label2="testp!arent"), queues)
    assert place({**rule, "filter": {"type": "deny"}}, both, queues) == ""


def test_tag_rule_parent() -> None:
    """tag_rule_test.go TestTagRuleParent."""
    queues = tree(CONF_PARENT_CHILD)

    def rule(value: str, create: bool, parent: dict[str, Any]) -> dict[str, Any]:
        return {"name": "tag", "value": value, "create": create, "parent": parent}

    existing = app("unknown", user="testuser", tags={"label1": "testchild", "label2": "testparent"})
    label2 = {"name": "tag", "value": "label2"}
    assert place(rule("label1", False, label2), existing, queues) == ""
    new = app("unknown", user="testuser", tags={"label1": "testchild", "label2": "testparentnew"})
    assert place(rule("label1", True, {**label2, "create": False}), new, queues) == ""
    assert place(rule("label1", True, {**label2, "create": True}), new, queues) == NAME_PARENT_CHILD
    label1 = {"name": "tag", "value": "label1"}
    with pytest.raises(PlacementError, match="leaf"):
        place(rule("label2", True, label1), new, queues)
    with pytest.raises(PlacementError):
        place(rule("label2", False, {**label1, "parent": label1}), new, queues)
    root = {
        "name": "tag",
        "value": "label2",
        "create": True,
        "parent": {"name": "fixed", "value": "root"},
    }
    assert place(rule("label2", True, root), new, queues) == "root.root.testparentnew.testparentnew"


def test_tag_rule_dao() -> None:
    """tag_rule_test.go Test_tagRule_ruleDAO: the tag name is lower-cased."""
    assert build_rule({"name": "tag", "value": "namespace"}).describe() == {
        "name": "tag",
        "parameters": {"tagName": "namespace", "create": "false"},
    }
    mixed = build_rule({"name": "tag", "value": "MixedCaseTag"}).describe()
    assert mixed["parameters"]["tagName"] == "mixedcasetag"
    filtered = build_rule(
        {"name": "tag", "value": "two", "create": True,
         "filter": {"type": "deny", "groups": ["group[0-9]"]}}
    ).describe()  # fmt: skip
    assert filtered["filter"] == {"type": "deny", "groupExp": "group[0-9]"}


# --- user_rule_test.go ----------------------------------------------------------------------


USER_QUEUES = """
partitions:
  - name: default
    queues:
      - name: test_dot_user
      - name: testchild
      - name: testparent
        queues:
          - name: testchild
"""


@pytest.mark.parametrize(
    ("user", "rule", "expected"),
    [
        ("testchild", {"name": "user"}, "root.testchild"),
        ("testparent", {"name": "user"}, "root.testparent"),  # fails on create, not in the rule
        ("test.user", {"name": "user"}, "root.test_dot_user"),
        (
            "testchild",
            {"name": "user", "parent": {"name": "fixed", "value": "testparent"}},
            "root.testparent.testchild",
        ),
        ("unknown", {"name": "user", "create": True}, "root.unknown"),
        (
            "test.user@gmail.com",
            {"name": "user", "create": True},
            "root.test_dot_user@gmail_dot_com",
        ),
        (
            "http://domain.com/server1/testuser@cloudera.com",
            {"name": "user", "create": True},
            "root.http://domain_dot_com/server1/testuser@cloudera_dot_com",
        ),
        ("unknown", {"name": "user", "filter": {"type": "deny"}}, ""),
    ],
)
def test_user_rule_place(user: str, rule: dict[str, Any], expected: str) -> None:
    """user_rule_test.go TestUserRulePlace."""
    assert place(rule, app("ignored", user=user), tree(USER_QUEUES)) == expected


def test_user_rule_invalid_name() -> None:
    """user_rule_test.go TestUserRulePlace ("invalid queue name")."""
    with pytest.raises(PlacementError):
        place({"name": "user", "create": True}, app(user="invalid!us>er"), tree(USER_QUEUES))


def test_user_rule_parent() -> None:
    """user_rule_test.go TestUserRuleParent."""
    queues = tree(CONF_PARENT_CHILD)
    child = app("unknown", user="testchild")

    def rule(create: bool, parent: dict[str, Any]) -> dict[str, Any]:
        return {"name": "user", "create": create, "parent": parent}

    assert place(rule(False, {"name": "fixed", "value": "testparent"}), child, queues) == ""
    other = {"name": "fixed", "value": "testother", "create": False}
    assert place(rule(True, other), child, queues) == ""
    new = {"name": "fixed", "value": "testparentnew", "create": True}
    assert place(rule(True, new), child, queues) == NAME_PARENT_CHILD
    with pytest.raises(PlacementError):
        place(rule(True, new), app("unknown", user="test!child"), queues)
    leaf = {"name": "fixed", "value": "testchild"}
    with pytest.raises(PlacementError, match="leaf"):
        place(rule(True, leaf), child, queues)
    with pytest.raises(PlacementError):
        place(rule(True, {**leaf, "parent": leaf}), child, queues)
    assert (
        place(rule(True, {"name": "fixed", "value": "root"}), child, queues)
        == "root.root.testchild"
    )


def test_user_rule_dao() -> None:
    """user_rule_test.go Test_userRule_ruleDAO."""
    assert build_rule({"name": "user"}).describe() == {
        "name": "user",
        "parameters": {"create": "false"},
    }
    filtered = build_rule(
        {"name": "user", "create": True, "filter": {"type": "deny", "users": ["user"]}}
    )
    assert filtered.describe()["filter"] == {"type": "deny", "userList": ["user"]}


# --- filter_test.go -------------------------------------------------------------------------


def test_new_filter_lists() -> None:
    """filter_test.go TestNewFilterLists."""
    for conf, allow in (({"type": "allow"}, True), ({"type": "deny"}, False),
                        ({"type": "allow", "users": [], "groups": []}, True)):  # fmt: skip
        built = Filter.parse(conf)
        assert built.allow is allow and built.empty
        assert not built.users and not built.groups and built.user_expression is None
    single = Filter.parse(
        {"type": "", "users": ["user1_a_#_b_c-d-/-e:f_@_gmail.com"],
         "groups": ["group1_a_b_c-d-e:f_gmail.com"]}
    )  # fmt: skip
    assert single.allow and not single.empty
    assert len(single.users) == 1 and len(single.groups) == 1 and single.user_expression is None
    double = Filter.parse({"users": ["user1", "user2"], "groups": ["group1", "group2"]})
    assert len(double.users) == 2 and len(double.groups) == 2


def test_new_filter_expressions() -> None:
    """filter_test.go TestNewFilterExpressions."""
    built = Filter.parse({"type": "allow", "users": ["user*"], "groups": ["group[1-9]"]})
    assert built.user_expression is not None and built.group_expression is not None
    assert not built.users and not built.groups and not built.empty
    broken = Filter.parse({"type": "allow", "users": ["user[a-z"], "groups": ["group[a-z"]})
    assert broken.user_expression is None and broken.group_expression is None


def test_new_filter_exceptions() -> None:
    """filter_test.go TestNewFilterExceptions."""
    duplicate = Filter.parse({"users": ["user1", "user1"], "groups": ["group1", "group1"]})
    assert len(duplicate.users) == 1 and len(duplicate.groups) == 1
    mixed = Filter.parse({"users": ["user1", "user*"], "groups": ["group1", "group[1-9]"]})
    assert len(mixed.users) == 1 and mixed.user_expression is None
    assert len(mixed.groups) == 1 and mixed.group_expression is None
    invalid = Filter.parse({"users": ["user!1"], "groups": ["grou#p1"]})
    assert not invalid.users and not invalid.groups and not invalid.empty
    some = Filter.parse({"users": ["use!r1", "user2"], "groups": ["gro!up1", "gro#up2"]})
    assert len(some.users) == 1 and not some.groups


def test_filter_user() -> None:
    """filter_test.go TestFilterUser: names are case-sensitive, expressions match."""
    single = Filter.parse({"users": ["user1"]})
    assert single.matches_user("user1")
    assert not single.matches_user("USER1") and not single.matches_user("user2")
    double = Filter.parse({"users": ["user1", "USER2"]})
    assert double.matches_user("USER2") and not double.matches_user("user2")
    expression = Filter.parse({"users": ["user?"]})
    assert expression.matches_user("user1") and expression.matches_user("user2")


def test_complex_expression() -> None:
    """filter_test.go TestComplexExpression."""
    built = Filter.parse({"users": ["(?i)user1"], "groups": ["^(group1.|other)$"]})
    assert built.matches_user("USER1") and not built.matches_user("user2")
    assert built.matches_group("group12") and built.matches_group("other")
    assert not built.matches_group("group101")


def test_filter_group() -> None:
    """filter_test.go TestFilterGroup."""
    built = Filter.parse({"groups": ["group1"]})
    assert built.matches_group("group1") and not built.matches_group("group2")


def test_allow_user() -> None:
    """filter_test.go TestAllowUser."""
    user1, user2 = UserGroup("user1"), UserGroup("user2")
    for users in (["user1"], ["user[0-1]"]):
        deny = Filter.parse({"type": "deny", "users": users})
        assert not deny.allows(user1) and deny.allows(user2)
        allow = Filter.parse({"type": "allow", "users": users})
        assert allow.allows(user1) and not allow.allows(user2)


def test_allow_group() -> None:
    """filter_test.go TestAllowGroup."""
    for groups, other in ((["group1"], "group2"), (["group[0-9]"], "nomatch")):
        deny = Filter.parse({"type": "deny", "groups": groups})
        assert not deny.allows(UserGroup("", ("group1",)))
        assert deny.allows(UserGroup("", (other,)))
        allow = Filter.parse({"type": "allow", "groups": groups})
        assert allow.allows(UserGroup("", ("group1",)))
        assert not allow.allows(UserGroup("", (other,)))


def test_allow_secondary_group() -> None:
    """filter_test.go TestAllowSecondaryGroup."""
    second = UserGroup("", ("nomatch", "group2"))
    assert not Filter.parse({"type": "deny", "groups": ["group2"]}).allows(second)
    assert Filter.parse({"type": "allow", "groups": ["group1", "group2"]}).allows(second)
    assert not Filter.parse({"type": "deny", "groups": ["group[0-9]"]}).allows(second)
    assert Filter.parse({"type": "allow", "groups": ["group[0-9]"]}).allows(second)


def test_allow_no_lists() -> None:
    """filter_test.go TestAllowNoLists."""
    who = UserGroup("user1", ("group1",))
    assert Filter.parse({}).allows(who)
    assert Filter.parse({"type": "allow"}).allows(who)
    assert not Filter.parse({"type": "deny"}).allows(who)


def test_filter_dao() -> None:
    """filter_test.go TestFilter_filterDAO."""
    assert Filter.parse({}).describe() is None
    assert Filter.parse({"type": "deny", "users": ["u1"], "groups": ["g[0-9]"]}).describe() == {
        "type": "deny",
        "userList": ["u1"],
        "groupExp": "g[0-9]",
    }


# --- placement_test.go ----------------------------------------------------------------------


def test_manager_new_and_init() -> None:
    """placement_test.go TestManagerNew, TestManagerInit, TestManagerUpdate: no rules means an
    implicit provided rule, then recovery; an unknown rule leaves the manager without rules
    (every application is rejected)."""
    queues = tree(CONF_TEST_QUEUE)
    for rules in (None, []):
        assert [rule.name for rule in Placer(rules, queues).rules] == ["provided", "recovery"]
    assert [rule.name for rule in Placer([{"name": "test"}], queues).rules] == ["test", "recovery"]
    broken = Placer([{"name": "unknown", "create": True}], queues)
    assert broken.rules == []
    assert not broken.place(app("root.testqueue")).placed
    chained = Placer([{"name": "test", "create": True, "parent": {"name": "test"}}], queues)
    assert [rule.name for rule in chained.rules] == ["test", "recovery"]


def test_manager_build_rule() -> None:
    """placement_test.go TestManagerBuildRule: order kept, parents attached, recovery last."""
    built = build_rules([{"name": "test", "parent": {"name": "test"}}])
    assert len(built) == 2 and built[0].parent is not None and built[0].parent.name == "test"
    assert [rule.name for rule in build_rules([{"name": "user"}, {"name": "test"}])] == [
        "user", "test", "recovery",
    ]  # fmt: skip


MANAGER_QUEUES = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: testparent
            submitacl: "*"
            queues:
              - name: testchild
          - name: fixed
            submitacl: "other-user "
            parent: true
"""


def test_manager_place_app() -> None:
    """placement_test.go TestManagerPlaceApp (without the draining case: a queue removed from
    the config is gone from the product's tree)."""
    rules = [
        {"name": "user", "create": False, "parent": {"name": "fixed", "value": "testparent"}},
        {"name": "provided", "create": True},
        {"name": "tag", "value": "namespace", "create": True},
    ]

    def where(application: Application) -> str | None:
        return Placer(rules, tree(MANAGER_QUEUES)).place(application).queue

    assert where(app(user="testchild")) == "root.testparent.testchild"
    assert where(app(user="other-user")) is None  # user rule: no create flag
    assert where(app("root.fixed.leaf", user="other-user")) == "root.fixed.leaf"
    assert where(app("root.fixed.other", user="unknown-user")) is None  # acl deny on create
    tag = {"namespace": "root.fixed.leaf"}
    assert where(app(user="unknown-user", tags=tag)) is None
    assert where(app(user="other-user", tags=tag)) == "root.fixed.leaf"
    assert where(app("root.fixed", user="other-user")) is None  # a parent


def test_manager_place_app_error() -> None:
    """placement_test.go TestManagerPlaceApp_Error: a parent rule yielding a leaf rejects."""
    rules = [
        {
            "name": "user",
            "parent": {"name": "user", "parent": {"name": "fixed", "value": "testparent"}},
        }
    ]
    placement = Placer(rules, tree(MANAGER_QUEUES)).place(app(user="testchild"))
    assert placement.queue is None and "leaf" in placement.reason


FORCE_QUEUES = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "any-user"
        queues:
{default}
          - name: provided
            submitacl: "*"
          - name: acldeny
            submitacl: " "
          - name: parent
            parent: true
            submitacl: "*"
"""
FORCE = {"yunikorn.apache.org/create.force": "true"}
NS = {"namespace": "namespace"}


def _force_cases(default: str) -> list[tuple[str, str, str, dict[str, str], str, bool]]:
    """(name, queue, placed, tags, user, forced) rows of TestForcePlaceApp; ``default`` is what
    the rows that fall through expect ("" = rejected)."""
    return [
        ("empty", "", default, {}, "any-user", False),
        ("provided unqualified", "provided", "root.provided", {}, "any-user", False),
        ("provided qualified", "root.provided", "root.provided", {}, "any-user", False),
        ("provided not exist", "unknown", default, {}, "any-user", False),
        ("provided parent", "root.parent", default, {}, "any-user", False),
        ("acl deny", "root.acldeny", default, {}, "deny-user", False),
        ("create", "unknown", "root.namespace", NS, "any-user", False),
        ("deny create", "unknown", default, NS, "deny-user", False),
        ("forced exist", "root.provided", "root.provided", {}, "any-user", True),
        ("forced and create", "unknown", "root.namespace", NS, "any-user", True),
        ("forced and deny create", "unknown", RECOVERY_QUEUE, NS, "deny-user", True),
        ("forced parent", "root.parent", RECOVERY_QUEUE, {}, "any-user", True),
        ("forced acl deny", "root.acldeny", RECOVERY_QUEUE, {}, "deny-user", True),
        ("forced not exist", "unknown", RECOVERY_QUEUE, {}, "any-user", True),
        ("forced not exist acl deny", "unknown", RECOVERY_QUEUE, {}, "deny-user", True),
    ]


@pytest.mark.parametrize(
    ("with_default", "case"),
    [(False, case) for case in _force_cases("")]
    + [(True, case) for case in _force_cases("root.default")],
    ids=lambda value: value[0] if isinstance(value, tuple) else str(value),
)
def test_force_place_app(with_default: bool, case: tuple) -> None:
    """placement_test.go TestForcePlaceApp (its first two tables: without and with
    ``root.default``). A forced application (its first pod already running) never falls back
    to ``root.default``: it is recovered."""
    _, queue, placed, tags, user, forced = case
    default = '          - name: default\n            submitacl: "*"' if with_default else ""
    queues = tree(FORCE_QUEUES.format(default=default))
    rules = [
        {"name": "provided", "create": False},
        {"name": "tag", "value": "namespace", "create": True},
    ]
    placement = Placer(rules, queues).place(app(queue, user=user, tags=tags, forced=forced))
    assert placement.queue == (placed or None)


def test_force_place_app_custom_default() -> None:
    """placement_test.go TestForcePlaceApp (third table: a fixed rule as custom default)."""
    queues_yaml = FORCE_QUEUES.format(
        default='          - name: custom\n            submitacl: "*"'
    )
    rules = [
        {"name": "provided", "create": False},
        {"name": "tag", "value": "namespace", "create": True},
        {"name": "fixed", "value": "root.custom", "create": True},
    ]
    for queue, placed, tags, user, forced in [
        ("", "root.custom", {}, "any-user", False),
        ("provided", "root.provided", {}, "any-user", False),
        ("root.provided", "root.provided", {}, "any-user", False),
        ("unknown", "root.custom", {}, "any-user", False),
        ("root.parent", "root.custom", {}, "any-user", False),
        ("root.acldeny", "root.custom", {}, "deny-user", False),
        ("unknown", "root.namespace", NS, "any-user", False),
        ("unknown", "root.custom", NS, "deny-user", False),
        ("root.provided", "root.provided", {}, "any-user", True),
        ("unknown", "root.namespace", NS, "any-user", True),
    ]:
        placer = Placer(rules, tree(queues_yaml))
        assert placer.place(app(queue, user=user, tags=tags, forced=forced)).queue == placed
