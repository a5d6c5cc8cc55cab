"""``placementrules``: the rule chains (names, ``create``, ``parent``, ``value``), their user and
group filters (names or RE2 expressions), and the queue paths the rules can place into."""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preemption.config import ROOT
from preemption.yunikorn_rules.decoder import Decoder
from preemption.yunikorn_rules.names import GROUP_NAME, QUEUE_NAME, USER_NAME
from preemption.yunikorn_rules.wording import listed, shown

#: A placement rule name: an identifier.
RULE_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")
#: A single filter entry holding one of these is read as a regular expression, not a name.
REGEXP_CHARACTERS = re.compile(r"[\^$*+?()\[{}|]")
#: Placement rules a config may name (compared lower-cased, as YuniKorn does). ``recovery`` is
#: YuniKorn's internal rule and ``test`` its testing rule: neither belongs in a config.
RULE_NAMES = ("provided", "user", "fixed", "tag")
FIXED, TAG = "fixed", "tag"
FILTER_TYPES = ("allow", "deny")


# The keys of each YuniKorn struct: the strict decoder refuses any other (keys are case-sensitive).
RULE_KEYS = ("name", "create", "filter", "parent", "value")
FILTER_KEYS = ("type", "users", "groups")
#: Longest placement rule chain (a rule and its parents) walked; deeper chains are refused.
MAX_RULE_CHAIN = 32
#: Longest filter expression compiled.
MAX_EXPRESSION_LENGTH = 1024


@dataclass
class _Rule:
    """One placement rule of a chain. ``name`` is the lower-cased known name or None when the
    name is invalid; ``sound`` says the rule passed every check, so its path may be followed."""

    at: str
    name: str | None
    create: bool
    value: str
    sound: bool


class PlacementRules(Decoder):
    """The partition's placement rule chains and the paths they place into."""

    def _placement_rules(self, value: object) -> list[list[_Rule]]:
        """Every rule chain (a rule and its parents, the rule first), checked on its own."""
        items = self._list(None, "extra.placementrules", value, "placement rules")
        chains: list[list[_Rule]] = []
        for index, item in enumerate(items or []):
            at = f"extra.placementrules[{index}]"
            if item is None:
                self.error(None, at, "is empty: each entry must be a placement rule")
                continue
            chains.append(self._rule_chain(at, item))
        return chains

    def _rule_chain(self, at: str, raw: object) -> list[_Rule]:
        chain: list[_Rule] = []
        while raw is not None:
            if len(chain) >= MAX_RULE_CHAIN:
                self.error(None, at, f"more than {MAX_RULE_CHAIN} nested parent rules")
                chain[-1].sound = False
                break
            fields = self._fields(None, at, raw, RULE_KEYS, "a placement rule")
            if fields is None:
                if chain:
                    chain[-1].sound = False
                break
            rule = self._rule(at, fields)
            chain.append(rule)
            raw = fields.get("parent")
            at = f"{at}.parent"
        for rule, parent in itertools.pairwise(chain):
            if rule.name == FIXED and _qualified(rule.value):
                rule.sound = False
                self.error(
                    None,
                    f"{rule.at}.value",
                    f"a fixed rule with the full path {shown(rule.value)} cannot have a parent "
                    f"rule ({parent.at}): only the first rule of a chain may start at root",
                )
        return chain

    def _rule(self, at: str, fields: Mapping[str, Any]) -> _Rule:
        errors_before = len(self.errors)
        name = self._rule_name(f"{at}.name", fields.get("name"))
        create = self._flag(None, f"{at}.create", fields.get("create"))
        value = self._text(None, f"{at}.value", fields.get("value"))
        if value is not None and name in (FIXED, TAG):
            self._rule_value(f"{at}.value", name, value)
        elif value and name is not None:
            self.warn(
                None,
                f"{at}.value",
                f"the {name} rule ignores value {shown(value)}: only fixed and tag read it",
            )
        self._filter(f"{at}.filter", fields.get("filter"))
        return _Rule(
            at=at,
            name=name,
            create=bool(create),
            value=value or "",
            sound=len(self.errors) == errors_before,
        )

    def _rule_name(self, at: str, value: object) -> str | None:
        name = self._text(None, at, value)
        if name is None:
            return None
        if not name:
            self.error(None, at, f"a placement rule needs a name: one of {listed(RULE_NAMES)}")
            return None
        if not RULE_NAME.fullmatch(name):
            self.error(
                None,
                at,
                f"{shown(name)} is not a valid rule name (a letter or _, then letters, digits "
                f"or _); known rules: {listed(RULE_NAMES)}",
            )
            return None
        lowered = name.lower()
        if lowered == "recovery":
            self.error(None, at, "'recovery' is YuniKorn's internal rule and cannot be configured")
            return None
        if lowered not in RULE_NAMES:
            self.error(
                None, at, f"unknown placement rule {shown(name)}; known: {listed(RULE_NAMES)}"
            )
            return None
        return lowered

    def _rule_value(self, at: str, name: str, value: str) -> None:
        if not value:
            what = "queue name or path" if name == FIXED else "tag name (e.g. namespace)"
            self.error(None, at, f"the {name} rule needs a value: the {what}")
            return
        if name != FIXED:
            return
        lowered = value.lower()
        if lowered.startswith(ROOT) and not _qualified(value):
            # YuniKorn's rule treats any value starting with "root" as a full path, and its
            # validator does so only for a lower-case "root": refuse both surprises.
            self.error(
                None,
                at,
                f"{shown(value)} starts with 'root' but is not a path from the root queue: write "
                "'root' or 'root.<queue>' in lower case, or a queue name that does not start "
                "with 'root'",
            )
            return
        for part in lowered.split("."):
            if not QUEUE_NAME.fullmatch(part):
                self.error(
                    None,
                    at,
                    f"{shown(value)} is not a queue path: {shown(part)} is not a valid queue "
                    "name (1-64 of a-z A-Z 0-9 _ : # / @ -)",
                )
                return

    def _filter(self, at: str, value: object) -> None:
        """A rule's user and group filter, as YuniKorn validates and then builds it."""
        fields = self._fields(None, at, value, FILTER_KEYS, "a filter")
        if fields is None:
            return
        kind = self._text(None, f"{at}.type", fields.get("type"))
        if kind is not None:
            lowered = kind.lower()
            if lowered not in ("", *FILTER_TYPES):
                self.error(
                    None,
                    f"{at}.type",
                    f"{shown(kind)} is not a filter type: use allow or deny",
                )
            elif lowered == "deny" and kind != "deny":
                # YuniKorn's validator accepts any case, but the filter itself only treats the
                # exact "deny" as deny: "DENY" would silently allow.
                self.error(
                    None,
                    f"{at}.type",
                    f"write 'deny' in lower case: YuniKorn treats {shown(kind)} as allow",
                )
        users = self._name_list(None, f"{at}.users", fields.get("users"), "user names")
        groups = self._name_list(None, f"{at}.groups", fields.get("groups"), "group names")
        self._filter_names(users, "user", USER_NAME)
        self._filter_names(groups, "group", GROUP_NAME)
        if kind is not None and kind == "deny" and not users and not groups:
            self.warn(
                None,
                at,
                "a deny filter without users or groups denies everyone: the rule never matches",
            )

    def _filter_names(
        self, names: list[tuple[str, str]], kind: str, pattern: re.Pattern[str]
    ) -> None:
        """One entry: a name or a regular expression. Two or more: names only.

        YuniKorn silently skips an entry of a longer list that is not a valid name; the product
        refuses it instead, like an ACL name.
        """
        if len(names) == 1:
            name, where = names[0]
            if pattern.fullmatch(name):
                return
            problem = _expression_problem(name)
            if problem is not None:
                self.error(
                    None,
                    where,
                    f"{shown(name)} is neither a valid {kind} name nor a regular expression "
                    f"({problem})",
                )
            return
        for name, where in names:
            if not pattern.fullmatch(name):
                self.error(
                    None,
                    where,
                    f"{shown(name)} is not a valid {kind} name, and YuniKorn reads a regular "
                    f"expression only when it is the only {kind} entry (it would silently "
                    "ignore this one)",
                )

    def _placement_paths(self, chains: list[list[_Rule]]) -> None:
        """The part of each rule chain that is fixed must fit the queue tree (YuniKorn's
        checkPlacementRules): it must exist unless the rule may create it, end at a leaf when
        nothing follows, and end at a parent when a dynamic rule adds queues below it."""
        for index, chain in enumerate(chains):
            if not chain or not all(rule.sound for rule in chain):
                continue
            ordered = list(reversed(chain))  # the outermost parent rule runs first
            parts: list[str] = []
            last_fixed: _Rule | None = None
            dynamic = False
            for rule in ordered:
                if rule.name != FIXED:
                    dynamic = bool(parts)
                    break
                value = rule.value.lower()
                parts = (
                    value.split(".")
                    if _qualified(value)
                    else [*(parts or [ROOT]), *value.split(".")]
                )
                last_fixed = rule
            if not parts or last_fixed is None:
                continue  # starts with a dynamic rule: nothing fixed to check
            names = "->".join(rule.name or "?" for rule in ordered)
            problem = self._path_problem(parts, create=chain[0].create, dynamic=dynamic)
            if problem is not None:
                self.error(
                    None,
                    f"{last_fixed.at}.value",
                    f"placement rule {index} ({names}) uses the queue path {'.'.join(parts)}, "
                    f"which {problem}",
                )

    def _path_problem(self, parts: list[str], *, create: bool, dynamic: bool) -> str | None:
        """Why a fixed queue path does not fit the tree, or None when it does."""
        level = [ROOT] if ROOT in self.queues else []
        current: str | None = None
        for position, part in enumerate(parts):
            if current is not None and not level:
                if not self.queues[current].parent_flag:
                    return (
                        f"goes below {current}, a leaf queue: no queue can be created under it "
                        "(set parent: true on it, or change the path)"
                    )
                return None if create else "does not exist and the rule's create is false"
            found = next(
                (path for path in level if self.queues[path].config.name.lower() == part), None
            )
            if found is None:
                return None if create else "does not exist and the rule's create is false"
            if position == len(parts) - 1:
                queue = self.queues[found]
                if dynamic and not queue.parent_flag:
                    return (
                        "is not marked parent: true, but the rules after it add queues below it "
                        "(YuniKorn requires the parent flag here, even on a queue with children)"
                    )
                if not dynamic and (queue.parent_flag or self.children.get(found)):
                    return "is not a leaf queue: applications can only be placed in leaf queues"
                return None
            current = found
            level = self.children.get(found, [])
        return None


def _expression_problem(text: str) -> str | None:
    """Why ``text`` is not a regular expression YuniKorn (Go's RE2) compiles, or None.

    Python's ``re`` compiles it; first the constructs RE2 lacks are refused (lookaround,
    backreferences, atomic groups, possessive quantifiers, comments, flags other than i m s,
    repeat counts over 1000). A few RE2-only forms (``\\pL``, ``\\z``, ``(?<name>...)``) are
    refused by Python in turn: rare in user filters, and refusing is the safe side.
    """
    if not REGEXP_CHARACTERS.search(text):
        return "it has none of ^ $ * + ? ( ) [ { } | that make one"
    if len(text) > MAX_EXPRESSION_LENGTH:
        return f"expressions are limited to {MAX_EXPRESSION_LENGTH} characters"
    unsupported = _re2_unsupported(text)
    if unsupported is not None:
        return f"Go's regular expressions do not support {unsupported}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nested-set FutureWarnings: [[:alpha:]] is valid RE2
            re.compile(text)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        return f"it does not compile: {exc}"
    return None


_RE2_UNSUPPORTED = (
    (re.compile(r"\(\?[=!]"), "lookahead (?= (?!"),
    (re.compile(r"\(\?<[=!]"), "lookbehind (?<= (?<!"),
    (re.compile(r"\(\?P="), "named backreferences (?P=name)"),
    (re.compile(r"\(\?\("), "conditionals (?(...)"),
    (re.compile(r"\(\?>"), "atomic groups (?>...)"),
    (re.compile(r"\(\?#"), "comments (?#...)"),
)


def _re2_unsupported(text: str) -> str | None:
    """A construct Python accepts but RE2 does not, found outside character classes."""
    outside = _outside_classes(text)
    for pattern, what in _RE2_UNSUPPORTED:
        if pattern.search(outside):
            return what
    if re.search(r"\\[1-9]", outside):
        return "backreferences \\1 to \\9"
    if re.search(r"\\Z", outside):
        return "\\Z (use $)"
    for flags in re.finditer(r"\(\?([a-zA-Z-]*)[:)]", outside):
        if set(flags.group(1)) - set("ims-"):
            return "inline flags other than i, m and s"
    if re.search(r"(?:[*+?]|\{[0-9]+(?:,[0-9]*)?\})\+", outside):
        return "possessive quantifiers such as a*+"
    for counts in re.finditer(r"\{([0-9]+)(?:,([0-9]*))?\}", outside):
        if any(number and int(number) > 1000 for number in counts.groups()):
            return "repeat counts above 1000"
    return None


def _outside_classes(text: str) -> str:
    """``text`` with escapes and character classes blanked out (``_``), so the checks above see
    only the constructs that mean something outside a ``[...]``. Backslash escapes are kept as
    two characters so ``\\1`` and ``\\Z`` stay visible."""
    kept: list[str] = []
    index = 0
    in_class = False
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            pair = text[index : index + 2]
            kept.append("__" if in_class or pair[1] in "*+?{}()[]|^$.\\" else pair)
            index += 2
            continue
        if in_class:
            if char == "]" and not _class_starts_here(text, index):
                in_class = False
            kept.append("_")
        elif char == "[":
            in_class = True
            kept.append("_")
        else:
            kept.append(char)
        index += 1
    return "".join(kept)


def _class_starts_here(text: str, index: int) -> bool:
    """A ``]`` right after ``[`` or ``[^`` is a literal member, not the end of the class."""
    before = text[max(0, index - 2) : index]
    return before.endswith("[") or before == "[^"


def _qualified(value: str) -> bool:
    """A fixed value that is a full path: ``root`` or ``root.<...>`` (lower case)."""
    return value == ROOT or value.startswith(ROOT + ".")
