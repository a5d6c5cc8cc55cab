from django.conf import settings
from django.http import HttpRequest

from scheduler_admin.accounts import permissions


def roles(request: HttpRequest) -> dict[str, object]:
    """What every page shows about the user's rights (``permissions`` decides them):

    - ``user_role``: their global role, if any; ``user_grants``: their queue grants in words
      ("admin of root.team-a in default"), shown next to their name;
    - ``can_operate`` / ``can_administer``: a global operator / admin (cluster-wide controls,
      the Users page, imports and reverts);
    - ``reads_everything``: a global viewer or above; otherwise the pages that show a whole
      partition (fences, history) are not offered.

    Controls about one queue ask ``{% may %}`` (``web.templatetags.access``) instead.
    """
    user = request.user
    held = permissions.grants_of(user)
    return {
        "user_role": permissions.global_role(user),
        "user_grants": [f"{grant.role} of {grant.path} in {grant.partition}" for grant in held],
        "can_operate": bool(permissions.can(user, permissions.OPERATE_CLUSTER)),
        "can_administer": bool(permissions.can(user, permissions.ADMINISTER)),
        "reads_everything": user.is_authenticated and not permissions.is_scoped(user),
    }


def sign_in(request: HttpRequest) -> dict[str, object]:
    """What the sign-in page and the Users page say about sign-in (issue 16, part "auth"):
    whether single sign-on is on and the provider's name, and the lockout rule."""
    return {
        "oidc_enabled": settings.OIDC_ENABLED,
        "oidc_provider_name": settings.OIDC_PROVIDER_NAME,
        "signin_failure_limit": settings.SIGNIN_FAILURE_LIMIT,
        "signin_address_failure_limit": settings.SIGNIN_ADDRESS_FAILURE_LIMIT,
        "signin_lockout_minutes": settings.SIGNIN_LOCKOUT_MINUTES,
    }
