"""``python -m tests.support.oidc_provider.manage setup|groups ...``: prepare the provider's
database (migrate, the client, users) and change a user's groups, in a process of its own (the
provider's settings, not the product's).

- ``setup CLIENT_ID CLIENT_SECRET REDIRECT_URI``: migrate; register the product as a
  confidential authorization-code client, RS256, skipping the consent page.
- ``user NAME PASSWORD EMAIL [GROUP...]``: create the user (or reset them) in exactly these
  groups.
- ``groups NAME [GROUP...]``: put the user in exactly these groups.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.oidc_provider.settings")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oauth2_provider.models import Application

    command, *args = argv
    if command == "setup":
        client_id, client_secret, redirect_uri = args
        call_command("migrate", verbosity=0)
        Application.objects.update_or_create(
            client_id=client_id,
            defaults={
                "client_secret": client_secret,
                "redirect_uris": redirect_uri,
                "client_type": Application.CLIENT_CONFIDENTIAL,
                "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
                "algorithm": Application.RS256_ALGORITHM,
                "skip_authorization": True,
                "name": "Scheduler Admin",
            },
        )
    elif command == "user":
        name, password, email, *groups = args
        user, _ = User.objects.get_or_create(username=name)
        user.email = email
        user.set_password(password)
        user.save()
        user.groups.set([Group.objects.get_or_create(name=group)[0] for group in groups])
    elif command == "groups":
        name, *groups = args
        user = User.objects.get(username=name)
        user.groups.set([Group.objects.get_or_create(name=group)[0] for group in groups])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
