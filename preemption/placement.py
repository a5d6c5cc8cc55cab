"""Where YuniKorn puts an application: its placement rules, evaluated as YuniKorn evaluates them
(SPEC 3.4). Pure standard-library code beside the engine, used by the cluster agent (and, later,
the product) to charge each pod to the queue YuniKorn charges it to.

Written from yunikorn-core's ``pkg/scheduler/placement`` (the rules, their filters and the
placement manager), ``pkg/scheduler/partition.go`` (``AddApplication``/``createQueue``: what
happens after a rule chose a queue that does not exist yet), ``pkg/scheduler/objects/queue.go``
(submit access, child templates) and ``pkg/common/security/acl.go`` (ACLs). The details that
decide where a pod lands:

- A rule returns a queue name, nothing (the next rule is tried), or an **error**: placement then
  ends at once and the application is rejected — no later rule, no ``root.default``.
- ``provided`` and ``tag`` names are full paths only when they start with ``root.`` (lower
  case); any other name is one queue, its dots replaced by ``_dot_``, under the parent rule's
  queue or ``root``. Paths are looked up lower-cased, as YuniKorn's partition looks them up.
- A rule's queue that does not exist is returned only with ``create``; one that exists but is a
  parent is passed over; the user needs submit access (``submitacl`` or ``adminacl`` of the queue
  or any ancestor; for a queue to be created, of its deepest existing ancestor).
- After the configured rules comes YuniKorn's ``recovery`` rule: an application whose first pod
  was already running when YuniKorn saw it (``forced``) lands in ``root.@recovery@``; otherwise,
  when nothing placed it, ``root.default`` if that queue exists.
- Where the chosen queue does not exist, YuniKorn creates it and any missing parents (**dynamic
  queues**), refusing to create under a leaf; a new leaf takes its parent's child template (a
  parent without one inherits its own parent's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROOT = "root"
DOT = "."
DOT_REPLACEMENT = "_dot_"
DEFAULT_QUEUE = "root.default"
RECOVERY_NAME = "@recovery@"
RECOVERY_QUEUE = f"{ROOT}.{RECOVERY_NAME}"

#: YuniKorn's ``configs.QueueNameRegExp``.
QUEUE_NAME = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
#: ``configs.UserRegExp`` and ``configs.GroupRegExp``: names a filter list may hold.
FILTER_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*[$]?")
FILTER_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
#: ``configs.SpecialRegExp``: a single filter entry with one of these is a regular expression.
FILTER_SPECIAL = re.compile(r"[\^$*+?()\[{}|]")
#: ``security.userNameRegExp`` and ``groupRegExp``: names an ACL may hold.
ACL_USER = re.compile(r"[_a-zA-Z][a-zA-Z0-9_.@-]*[$]?")
ACL_GROUP = re.compile(r"[_a-zA-Z][a-zA-Z0-9_-]*")
WILDCARD = "*"

PROVIDED, USER, FIXED, TAG, TEST, RECOVERY = "provided", "user", "fixed", "tag", "test", "recovery"


class PlacementConfigError(ValueError):
    """The partition's placement rules cannot be built (YuniKorn refuses such a config)."""


class PlacementError(Exception):
    """A rule failed: YuniKorn rejects the application without trying later rules."""


def valid_queue_name(name: str) -> bool:
    return QUEUE_NAME.fullmatch(name) is not None


def replace_dot(name: str) -> str:
    return name.replace(DOT, DOT_REPLACEMENT)


def _check_name(name: str) -> None:
    if not valid_queue_name(name):
        raise PlacementError(
            f"invalid queue name {name!r}: 1 to 64 of letters, digits and _ : # / @ -"
        )


def _check_path(path: str) -> None:
    for part in path.split(DOT):
        _check_name(part)


# --- Users, ACLs, filters ---------------------------------------------------------------------


@dataclass(frozen=True)
class UserGroup:
    """The user and groups an application runs as (k8shim reads them from
    ``yunikorn.apache.org/user.info``; ``nobody`` without it)."""

    user: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class ACL:
    """``security.ACL``: ``"users groups"``, comma-separated; ``*`` for everyone; empty for
    nobody (YuniKorn fails closed)."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    everyone: bool = False

    @classmethod
    def parse(cls, text: object) -> ACL:
        if not isinstance(text, str) or text == "":
            return cls()
        fields = text.split(" ")
        if len(fields) > 2:
            return cls()  # YuniKorn's validator refuses it; the queue grants nothing
        everyone = text.strip() == WILDCARD
        user_list = fields[0].split(",")
        users: set[str] = set()
        if len(user_list) == 1 and user_list[0] == WILDCARD:
            everyone = True
        else:
            users = {name for name in user_list if name and ACL_USER.fullmatch(name)}
        groups: set[str] = set()
        if len(fields) == 2 and not everyone:
            group_list = fields[1].split(",")
            if len(group_list) == 1 and group_list[0] == WILDCARD:
                everyone, users = True, set()
            else:
                groups = {name for name in group_list if name and ACL_GROUP.fullmatch(name)}
        return cls(frozenset(users), frozenset(groups), everyone)

    def allows(self, who: UserGroup) -> bool:
        return (
            self.everyone
            or who.user in self.users
            or any(group in self.groups for group in who.groups)
        )


def _compile(expression: str) -> re.Pattern[str] | None:
    try:
        return re.compile(expression)
    except re.error:
        return None


@dataclass(frozen=True)
class Filter:
    """A rule's ``filter``: which users and groups the rule applies to (``allow``) or skips
    (``deny``). A single entry with regular-expression characters is an expression (matched
    anywhere in the name, as Go's ``MatchString``); otherwise entries are exact names, and
    invalid ones are dropped."""

    allow: bool = True
    empty: bool = True
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    user_expression: re.Pattern[str] | None = None
    group_expression: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, raw: object) -> Filter:
        conf = raw if isinstance(raw, Mapping) else {}
        allow = conf.get("type") != "deny"
        users, user_exp, users_set = cls._entries(conf.get("users"), FILTER_USER)
        groups, group_exp, groups_set = cls._entries(conf.get("groups"), FILTER_GROUP)
        return cls(
            allow=allow,
            empty=not (users_set or groups_set),
            users=users,
            groups=groups,
            user_expression=user_exp,
            group_expression=group_exp,
        )

    @staticmethod
    def _entries(
        raw: object, pattern: re.Pattern[str]
    ) -> tuple[frozenset[str], re.Pattern[str] | None, bool]:
        entries = [str(item) for item in raw] if isinstance(raw, list) else []
        if not entries:
            return frozenset(), None, False
        if len(entries) == 1:
            only = entries[0]
            if FILTER_SPECIAL.search(only):
                return frozenset(), _compile(only), True
            return frozenset({only} if pattern.fullmatch(only) else ()), None, True
        return frozenset(item for item in entries if pattern.fullmatch(item)), None, True

    def matches_user(self, user: str) -> bool:
        if self.user_expression is not None:
            return self.user_expression.search(user) is not None
        return user in self.users

    def matches_group(self, group: str) -> bool:
        if self.group_expression is not None:
            return self.group_expression.search(group) is not None
        return group in self.groups

    def allows(self, who: UserGroup) -> bool:
        if self.empty:
            return self.allow
        if self.matches_user(who.user) or any(self.matches_group(g) for g in who.groups):
            return self.allow
        return not self.allow

    def describe(self) -> dict[str, Any] | None:
        """What YuniKorn's REST API shows of the filter (``FilterDAO``); None when empty."""
        if self.empty:
            return None
        shown: dict[str, Any] = {"type": "allow" if self.allow else "deny"}
        if self.users:
            shown["userList"] = sorted(self.users)
        if self.groups:
            shown["groupList"] = sorted(self.groups)
        if self.user_expression is not None:
            shown["userExp"] = self.user_expression.pattern
        if self.group_expression is not None:
            shown["groupExp"] = self.group_expression.pattern
        return shown


# --- The queue tree --------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeQueue:
    """A queue as placement sees it: its path in the config's spelling, whether it is a leaf,
    its ACLs, its child template (for a parent: what its new leaves take; for a dynamic leaf:
    what it was created with) and whether placement created it (``dynamic``)."""

    path: str
    leaf: bool
    submit_acl: ACL = ACL()
    admin_acl: ACL = ACL()
    template: Mapping[str, Any] | None = None
    dynamic: bool = False


def template_of(raw: object) -> dict[str, Any] | None:
    """A ``childtemplate`` as YuniKorn keeps it, or None when it sets nothing
    (``template.isChildTemplateEmpty``: entries with an empty key or value do not count)."""
    if not isinstance(raw, Mapping):
        return None
    resources = raw.get("resources")
    resources = resources if isinstance(resources, Mapping) else {}

    def sets_something(values: object) -> bool:
        return isinstance(values, Mapping) and any(key and value for key, value in values.items())

    if not (
        raw.get("maxapplications")
        or sets_something(raw.get("properties"))
        or sets_something(resources.get("guaranteed"))
        or sets_something(resources.get("max"))
    ):
        return None
    return json.loads(json.dumps(dict(raw), default=str))


class QueueTree:
    """The partition's queues by lower-cased path (YuniKorn lower-cases every path it looks
    up), plus the dynamic queues placement created so far."""

    def __init__(self, queues: Iterable[TreeQueue]) -> None:
        self._queues: dict[str, TreeQueue] = {}
        for queue in queues:
            self._queues[queue.path.lower()] = queue
        if ROOT not in self._queues:
            self._queues[ROOT] = TreeQueue(ROOT, leaf=False)

    @classmethod
    def from_config(cls, queues: Iterable[Mapping[str, Any]]) -> QueueTree:
        """From the product's config JSON (``queues``: ``path``, ``parent``, ``extra``). A queue
        is a parent when it has children or says ``parent: true``; its child template is its
        own, else its parent's (as YuniKorn passes templates down to parent queues)."""
        items = sorted(queues, key=lambda item: str(item["path"]).count(DOT))
        parents = {str(item["parent"]).lower() for item in items if item.get("parent")}
        built: list[TreeQueue] = []
        templates: dict[str, Mapping[str, Any] | None] = {}
        for item in items:
            path = str(item["path"])
            extra = item.get("extra") or {}
            own = template_of(extra.get("childtemplate"))
            inherited = templates.get(str(item.get("parent") or "").lower())
            template = own if own is not None else inherited
            templates[path.lower()] = template
            declared_parent = str(extra.get("parent", "")).lower() == "true"
            leaf = path.lower() != ROOT and path.lower() not in parents and not declared_parent
            built.append(
                TreeQueue(
                    path=path,
                    leaf=leaf,
                    submit_acl=ACL.parse(extra.get("submitacl")),
                    admin_acl=ACL.parse(extra.get("adminacl")),
                    template=template,
                )
            )
        return cls(built)

    def get(self, path: str) -> TreeQueue | None:
        """``PartitionContext.getQueueInternal``: the queue at ``path``, any case."""
        lowered = path.lower()
        if lowered.split(DOT, 1)[0] != ROOT:
            return None
        return self._queues.get(lowered)

    def add(self, queue: TreeQueue) -> None:
        self._queues[queue.path.lower()] = queue

    def queues(self) -> list[TreeQueue]:
        return list(self._queues.values())

    def submit_access(self, path: str, who: UserGroup) -> bool:
        """``Queue.CheckSubmitAccess``: the queue's or any ancestor's submit or admin ACL; never
        for the recovery queue."""
        if path.lower() == RECOVERY_QUEUE:
            return False
        current = path.lower()
        while True:
            queue = self._queues.get(current)
            if queue is not None and (queue.submit_acl.allows(who) or queue.admin_acl.allows(who)):
                return True
            if DOT not in current:
                return False
            current = current.rsplit(DOT, 1)[0]


# --- Applications and rules ------------------------------------------------------------------


@dataclass(frozen=True)
class Application:
    """What placement reads of an application: the queue its pod names (as written), its user,
    its tags (``namespace``, ``namespace.parentqueue``, ...) and whether it is ``forced`` (its
    first pod already ran: YuniKorn recovers it rather than rejecting it)."""

    id: str
    queue: str = ""
    user: UserGroup = UserGroup("nobody")
    tags: Mapping[str, str] = field(default_factory=dict)
    forced: bool = False

    def tag(self, name: str) -> str:
        """``Application.GetTag``: tag names compare case-insensitively."""
        for key, value in self.tags.items():
            if key.lower() == name.lower():
                return value
        return ""


class Rule:
    """One placement rule (``rule`` in yunikorn-core). ``place`` returns a queue path, "" to
    pass to the next rule, or raises ``PlacementError``."""

    name = ""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.create = str(conf.get("create")).lower() == "true"
        self.filter = Filter.parse(conf.get("filter"))
        parent = conf.get("parent")
        self.parent: Rule | None = build_rule(parent) if isinstance(parent, Mapping) else None

    def place(self, app: Application, tree: QueueTree) -> str:
        raise NotImplementedError

    def parameters(self) -> dict[str, str]:
        return {"create": "true" if self.create else "false"}

    def describe(self) -> dict[str, Any]:
        """The rule as YuniKorn's REST API shows it (``RuleDAO``)."""
        shown: dict[str, Any] = {"name": self.name, "parameters": self.parameters()}
        if self.parent is not None:
            shown["parentRule"] = self.parent.describe()
        described = self.filter.describe()
        if described is not None:
            shown["filter"] = described
        return shown

    def _under_parent(self, app: Application, tree: QueueTree, child: str) -> str:
        """``child`` under the parent rule's queue (or root); "" when the parent rule gives none.
        A parent rule that yields an existing leaf is an error."""
        parent_name = ""
        if self.parent is not None:
            parent_name = self.parent.place(app, tree)
            if not parent_name:
                return ""
            if not parent_name.startswith(ROOT + DOT):
                parent_name = f"{ROOT}{DOT}{parent_name}"
            parent_queue = tree.get(parent_name)
            if parent_queue is not None and parent_queue.leaf:
                raise PlacementError(f"parent rule returned a leaf queue: {parent_name}")
        return f"{parent_name or ROOT}{DOT}{child}"

    def _existing_or_created(self, tree: QueueTree, name: str) -> str:
        return name if self.create or tree.get(name) is not None else ""

    def _named(self, app: Application, tree: QueueTree, name: str) -> str:
        """A name from the pod or a tag: a path when it starts with ``root.``, else one queue."""
        if name.startswith(ROOT + DOT):
            _check_path(name)
        else:
            child = replace_dot(name)
            _check_name(child)
            name = self._under_parent(app, tree, child)
            if not name:
                return ""
        return self._existing_or_created(tree, name)


def _value(conf: Mapping[str, Any], missing: str) -> str:
    """A rule's ``value``, lower-cased (``normalise``); ``missing`` when it has none."""
    value = str(conf.get("value") or "").lower()
    if not value:
        raise PlacementConfigError(missing)
    return value


class ProvidedRule(Rule):
    """The queue the pod names (label, annotation)."""

    name = PROVIDED

    def place(self, app: Application, tree: QueueTree) -> str:
        if not app.queue or not self.filter.allows(app.user):
            return ""
        return self._named(app, tree, app.queue)


class TagRule(Rule):
    """The queue named by one of the application's tags (``value``: the tag name)."""

    name = TAG

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.tag_name = _value(conf, "a tag queue rule must have a tag name set")
        super().__init__(conf)

    def parameters(self) -> dict[str, str]:
        return {"tagName": self.tag_name, **super().parameters()}

    def place(self, app: Application, tree: QueueTree) -> str:
        value = app.tag(self.tag_name)
        if not value or not self.filter.allows(app.user):
            return ""
        return self._named(app, tree, value)


class UserRule(Rule):
    """A queue named after the user (dots as ``_dot_``)."""

    name = USER

    def place(self, app: Application, tree: QueueTree) -> str:
        if not self.filter.allows(app.user):
            return ""
        child = replace_dot(app.user.user)
        _check_name(child)
        name = self._under_parent(app, tree, child)
        return self._existing_or_created(tree, name) if name else ""


class FixedRule(Rule):
    """A configured queue (``value``, lower-cased); a full path when it starts with ``root``."""

    name = FIXED

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.queue = _value(conf, "a fixed queue rule must have a queue name set")
        for part in self.queue.split(DOT):
            if not valid_queue_name(part):
                raise PlacementConfigError(f"invalid queue name {part!r} in fixed rule")
        # YuniKorn tests the prefix "root", not "root.": "rootx" counts as a full path too.
        self.qualified = self.queue.startswith(ROOT)
        if self.qualified and isinstance(conf.get("parent"), Mapping):
            raise PlacementConfigError(
                "cannot have a fixed queue rule with a qualified queue name and a parent rule"
            )
        super().__init__(conf)

    def parameters(self) -> dict[str, str]:
        return {
            "queue": self.queue,
            "qualified": "true" if self.qualified else "false",
            **super().parameters(),
        }

    def place(self, app: Application, tree: QueueTree) -> str:
        if not self.filter.allows(app.user):
            return ""
        name = self.queue
        if not self.qualified:
            name = self._under_parent(app, tree, self.queue)
            if not name:
                return ""
        return self._existing_or_created(tree, name)


class TestRule(Rule):
    """YuniKorn's rule for its own tests (the product's validator refuses it in a config): the
    provided queue with dots replaced, else ``test``. Kept so that YuniKorn's tests translate."""

    name = TEST

    def place(self, app: Application, tree: QueueTree) -> str:
        if app.queue:
            _check_path(app.queue)
            return replace_dot(app.queue)
        return TEST


class RecoveryRule(Rule):
    """Added after the configured rules: a forced application goes to ``root.@recovery@``."""

    name = RECOVERY

    def __init__(self) -> None:
        super().__init__({})

    def parameters(self) -> dict[str, str]:
        return {"queue": RECOVERY_QUEUE}

    def place(self, app: Application, tree: QueueTree) -> str:
        return RECOVERY_QUEUE if app.forced else ""


_RULES: dict[str, type[Rule]] = {
    PROVIDED: ProvidedRule,
    USER: UserRule,
    FIXED: FixedRule,
    TAG: TagRule,
    TEST: TestRule,
}


def build_rule(conf: Mapping[str, Any]) -> Rule:
    """``newRule``: one configured rule (and its parent chain)."""
    name = str(conf.get("name") or "").lower()
    if name == RECOVERY:
        raise PlacementConfigError("recovery rule cannot be part of the config")
    kind = _RULES.get(name)
    if kind is None:
        raise PlacementConfigError(f"unknown rule name specified {conf.get('name')!r}")
    return kind(conf)


def build_rules(confs: Sequence[Mapping[str, Any]] | None) -> list[Rule]:
    """``buildRules``: the configured rules (an implicit ``provided`` when there are none)
    followed by the recovery rule."""
    confs = list(confs or []) or [{"name": PROVIDED, "create": False}]
    return [*(build_rule(conf) for conf in confs), RecoveryRule()]


# --- Placing an application --------------------------------------------------------------------


@dataclass(frozen=True)
class Placement:
    """Where YuniKorn puts an application: ``queue`` (the config's spelling of an existing queue,
    lower case for a created one), the ``rule`` that chose it, the dynamic queues YuniKorn
    creates for it (top-down), or ``queue=None`` and the ``reason`` it is rejected."""

    queue: str | None
    rule: str = ""
    created: tuple[TreeQueue, ...] = ()
    reason: str = ""

    @property
    def placed(self) -> bool:
        return self.queue is not None


class Placer:
    """The partition's placement manager: its rules, over a queue tree that grows with the
    dynamic queues it creates (an application placed later sees the queues earlier ones
    created, as in YuniKorn)."""

    def __init__(self, rules: Sequence[Mapping[str, Any]] | None, tree: QueueTree) -> None:
        self.tree = tree
        try:
            self.rules: list[Rule] = build_rules(rules)
            self.config_error = ""
        except PlacementConfigError as error:
            # YuniKorn keeps a manager without rules: every application is rejected.
            self.rules = []
            self.config_error = str(error)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Placer:
        """From the product's config JSON (``partition.extra.placementrules`` and ``queues``)."""
        extra = (config.get("partition") or {}).get("extra") or {}
        rules = extra.get("placementrules")
        return cls(
            rules if isinstance(rules, list) else None,
            QueueTree.from_config(config.get("queues") or []),
        )

    def choose(self, app: Application) -> tuple[str, str]:
        """``AppPlacementManager.PlaceApplication``: (queue path, rule name); ("", why) when
        rejected. Raises ``PlacementError`` when a rule fails."""
        if self.config_error:
            return "", f"the placement rules cannot be used: {self.config_error}"
        passed: list[str] = []
        for index, rule in enumerate(self.rules):
            last = index == len(self.rules) - 1
            name = rule.place(app, self.tree)
            chosen_by = rule.name
            if last and not name and self.tree.get(DEFAULT_QUEUE) is not None:
                name, chosen_by = DEFAULT_QUEUE, "default"
            if not name:
                continue
            if name == RECOVERY_QUEUE and app.forced:
                return name, chosen_by
            queue = self.tree.get(name)
            if queue is None:
                ancestor = self._deepest_existing(name)
                if not self.tree.submit_access(ancestor, app.user):
                    passed.append(f"{chosen_by}: no submit access to {ancestor} to create {name}")
                    continue
            elif not queue.leaf:
                passed.append(f"{chosen_by}: {queue.path} is a parent queue")
                continue
            elif not self.tree.submit_access(name, app.user):
                passed.append(f"{chosen_by}: no submit access to {queue.path}")
                continue
            return name, chosen_by
        trail = "; ".join(passed)
        return "", "no placement rule matched" + (f" ({trail})" if trail else "")

    def _deepest_existing(self, path: str) -> str:
        current = path
        while self.tree.get(current) is None:
            if DOT not in current:
                raise PlacementError(f"illegal queue name passed in: {path}")
            current = current.rsplit(DOT, 1)[0]
        return current

    def place(self, app: Application) -> Placement:
        """Choose a queue and, as ``PartitionContext.AddApplication`` does, create it when it
        does not exist (adding the dynamic queues to the tree)."""
        try:
            name, rule = self.choose(app)
            if not name:
                return Placement(None, reason=rule)
            queue = self.tree.get(name)
            created: tuple[TreeQueue, ...] = ()
            if queue is None:
                created = self._create(name, app)
                queue = created[-1]
            if not queue.leaf:
                raise PlacementError(f"failed to find queue {name}: not a leaf queue")
            return Placement(queue.path, rule=rule, created=created)
        except PlacementError as error:
            return Placement(None, reason=str(error))

    def _create(self, name: str, app: Application) -> tuple[TreeQueue, ...]:
        """``createQueue`` (and ``NewRecoveryQueue``): the missing queues, top-down."""
        if name.lower() == RECOVERY_QUEUE:
            recovery = TreeQueue(RECOVERY_QUEUE, leaf=True, dynamic=True)
            self.tree.add(recovery)
            return (recovery,)
        if not name.startswith(ROOT) or DOT not in name:
            raise PlacementError(f"illegal queue name passed in: {name}")
        ancestor = self._deepest_existing(name)
        if not self.tree.submit_access(ancestor, app.user):
            raise PlacementError(f"submit access to {ancestor} denied to create {name}")
        parent = self.tree.get(ancestor)
        assert parent is not None
        if parent.leaf:
            raise PlacementError(f"creation of queue {name} failed: {ancestor} is a leaf queue")
        missing = name[len(ancestor) + 1 :].split(DOT)
        for part in missing:
            _check_name(part)
            if part == RECOVERY_NAME:
                raise PlacementError(f"dynamic queue cannot be {RECOVERY_QUEUE}")
        created: list[TreeQueue] = []
        path = parent.path.lower()
        template = parent.template
        for position, part in enumerate(missing):
            path = f"{path}{DOT}{part.lower()}"
            leaf = position == len(missing) - 1
            queue = TreeQueue(path, leaf=leaf, template=template, dynamic=True)
            self.tree.add(queue)
            created.append(queue)
        return tuple(created)
