"""``adminacl`` and ``submitacl``: the ACL text YuniKorn splits into users and groups, and the
names its ACLs keep."""

from __future__ import annotations

import re

from preemption.yunikorn_rules.decoder import Decoder
from preemption.yunikorn_rules.names import (
    ACL_GROUP_CHARACTERS,
    ACL_GROUP_NAME,
    ACL_USER_CHARACTERS,
    ACL_USER_NAME,
    WILDCARD,
)
from preemption.yunikorn_rules.wording import shown


class AclRules(Decoder):
    """A queue's ``adminacl`` and ``submitacl``."""

    def _acl(self, owner: str, at: str, value: object) -> None:
        """``"users groups"``: comma-separated users, one space, comma-separated groups.

        YuniKorn splits the raw text on single spaces and fails to apply a queue whose ACL has
        more than two parts (its validator trims first, so `` * `` passes there but not when the
        queue is built): any third part is refused. A name YuniKorn's ACL would silently drop
        (and an empty entry from a stray comma) is refused too. ``*`` alone, as the whole user or
        group part, allows everyone; "" allows no one; a leading space gives groups only.
        """
        text = self._text(owner, at, value)
        if not text:
            return
        parts = text.split(" ")
        if len(parts) > 2:
            self.error(
                owner,
                at,
                f"{shown(text)} has {len(parts)} space-separated parts; an ACL is at most "
                "'user1,user2 group1,group2' with exactly one space (a leading space for groups "
                "only), or '*' for everyone",
            )
            return
        self._acl_names(owner, at, parts[0], "user", ACL_USER_NAME, ACL_USER_CHARACTERS)
        if len(parts) == 2:
            self._acl_names(owner, at, parts[1], "group", ACL_GROUP_NAME, ACL_GROUP_CHARACTERS)

    def _acl_names(
        self, owner: str, at: str, part: str, kind: str, pattern: re.Pattern[str], allowed: str
    ) -> None:
        if part in ("", WILDCARD):
            return
        for name in part.split(","):
            if name == WILDCARD:
                self.error(
                    owner, at, f"'*' must be the whole {kind} list to allow everyone, not one entry"
                )
            elif not name:
                self.error(owner, at, f"the {kind} list {shown(part)} has an empty entry")
            elif not pattern.fullmatch(name):
                self.error(
                    owner,
                    at,
                    f"{shown(name)} is not a {kind} name YuniKorn's ACLs accept (they silently "
                    f"ignore it): start with a letter or _, then {allowed}",
                )
