"""Helpers shared by the config commands: resolving the acting user and printing errors."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import CommandError

from preemption.hierarchy import ConfigErrors
from scheduler_admin.queues.yaml_io import error_lines


def resolve_user(username: str | None) -> AbstractBaseUser | None:
    """The user named by ``--user``; None (recorded as "system") when not given."""
    if not username:
        return None
    try:
        return get_user_model().objects.get_by_natural_key(username)
    except get_user_model().DoesNotExist:
        raise CommandError(f"--user: no user {username!r}") from None


def errors_to_command_error(source: str, exc: ConfigErrors) -> CommandError:
    """One line per problem, each naming the file and the field, for a non-zero exit."""
    lines = error_lines(source, exc.errors)
    return CommandError(f"{len(lines)} problem(s), nothing was changed:\n" + "\n".join(lines))
