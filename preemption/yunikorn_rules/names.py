"""The names YuniKorn accepts in the kept keys: queue, user and group names (in limits and
placement filters) and the narrower user and group names its ACLs keep. Every pattern is used with
``fullmatch``."""

from __future__ import annotations

import re

#: A queue name, also each dot-separated part of a ``fixed`` rule's value.
QUEUE_NAME = re.compile(r"[a-zA-Z0-9_:#/@-]{1,64}")
#: A user name in a limit or a placement filter (Kubernetes service accounts included).
USER_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9:#/_.@-]*\$?")
#: A group name in a limit or a placement filter.
GROUP_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9:_.-]*")
#: A user name YuniKorn's ACLs keep; ACLs silently drop any other (no ``:`` ``#`` ``/``).
ACL_USER_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_.@-]*\$?")
#: A group name YuniKorn's ACLs keep (no ``.`` or ``:``).
ACL_GROUP_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_-]*")
#: What the name patterns allow after the first character, for messages.
USER_CHARACTERS = "letters, digits, _ : # / . @ - and a final $"
GROUP_CHARACTERS = "letters, digits, _ : . -"
ACL_USER_CHARACTERS = "letters, digits, _ . @ - and a final $"
ACL_GROUP_CHARACTERS = "letters, digits, _ -"
WILDCARD = "*"
