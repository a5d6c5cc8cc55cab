"""Users with a global role (a group of that name), and API keys for them."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Group

from scheduler_admin.accounts.tokens import create_token


def give_role(user: AbstractUser, role: str) -> None:
    """Make ``user`` a member of the role's group, creating the group when a flush (a
    transactional test) has emptied it."""
    user.groups.add(Group.objects.get_or_create(name=role)[0])


def user_with_role(
    username: str, role: str | None = None, *, password: str | None = None
) -> AbstractUser:
    """A new user holding ``role`` (None: no role), with ``password`` if one is given."""
    user = get_user_model().objects.create_user(username, password=password)
    if role:
        give_role(user, role)
    return user


def role_user(username: str, role: str) -> AbstractUser:
    """The user ``username`` (created on first use) holding ``role``: a test may ask for it
    more than once."""
    user, _ = get_user_model().objects.get_or_create(username=username)
    give_role(user, role)
    return user


def token_key(user: AbstractUser, name: str = "test") -> str:
    """A working API key for ``user``, stored as every token is (hashed) but without the
    ``token.issued`` audit event ``issue_token`` writes: tests that count audit events see only
    the events of what they test."""
    return create_token(user, name=name, expires_at=None)[1]
