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
