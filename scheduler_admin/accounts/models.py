"""The accounts app's models live in modules of their own; Django finds them through here."""

from scheduler_admin.accounts.grant_models import GrantRole, GrantSource, QueueGrant
from scheduler_admin.accounts.identities import OidcIdentity
from scheduler_admin.accounts.tokens import ApiToken

__all__ = ["ApiToken", "GrantRole", "GrantSource", "OidcIdentity", "QueueGrant"]
