"""A queue grant written as text, ``PARTITION:QUEUE:ROLE`` (``default:root.team-a:admin``):
how ``manage.py create_user --grant`` and ``OIDC_GRANT_GROUPS`` name the grants to give.

Read by the settings module too (``OIDC_GRANT_GROUPS`` is parsed at start-up), so nothing here
imports a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The roles a grant gives (``grant_models.GrantRole``; repeated here to stay model-free).
GRANT_ROLES = ("operator", "admin")

#: Partition and queue names may hold colons (YuniKorn's rule), but a queue path starts at
#: ``root``: the partition ends at the first ``:root`` that begins one, the role follows the
#: last colon.
GRANT_TEXT = re.compile(r"^(?P<partition>.+?):(?P<queue>root(?:\..*)?):(?P<role>[^:]*)$")


@dataclass(frozen=True, order=True)
class GrantSpec:
    """A grant to give: ``role`` on ``queue`` (and below) in ``partition``."""

    partition: str
    queue: str
    role: str

    @classmethod
    def parse(cls, text: str) -> GrantSpec:
        """``default:root.team-a:admin``; ``ValueError`` saying what is wrong otherwise."""
        found = GRANT_TEXT.match(text.strip())
        if found is None:
            raise ValueError(
                f"{text.strip()!r} must read PARTITION:QUEUE:ROLE, e.g. default:root.team-a:admin"
            )
        spec = cls(found["partition"], found["queue"], found["role"])
        if spec.role not in GRANT_ROLES:
            raise ValueError(
                f"{text.strip()!r}: unknown role {spec.role!r}; a grant gives operator or admin"
            )
        return spec

    def __str__(self) -> str:
        return f"{self.partition}:{self.queue}:{self.role}"

    @property
    def words(self) -> str:
        return f"{self.role} of {self.queue} in {self.partition}"
