from django.conf import settings
from django.http import HttpRequest

from scheduler_admin.accounts.roles import ADMIN, OPERATOR, has_role, role_of


def roles(request: HttpRequest) -> dict[str, object]:
    """Lets templates show edit controls only to the roles that may use them."""
    user = request.user
    return {
        "user_role": role_of(user),
        "can_operate": has_role(user, OPERATOR),
        "can_administer": has_role(user, ADMIN),
    }


def sign_in(request: HttpRequest) -> dict[str, object]:
    """What the sign-in page and the Users page say about sign-in (issue 16, part "auth"):
    whether single sign-on is on and the provider's name, and the lockout rule."""
    return {
        "oidc_enabled": settings.OIDC_ENABLED,
        "oidc_provider_name": settings.OIDC_PROVIDER_NAME,
        "signin_failure_limit": settings.SIGNIN_FAILURE_LIMIT,
        "signin_lockout_minutes": settings.SIGNIN_LOCKOUT_MINUTES,
    }
