"""Users page routes: the list (GET) and one POST URL per action on a user; API tokens: each
user's own (``/account/tokens/``) and, for admins, any user's (``/users/<pk>/tokens/``)."""

from django.urls import path

from scheduler_admin.web.users import grants, password, signin, tokens, views

urlpatterns = [
    path("users/", views.user_list, name="users"),
    path("users/create/", views.user_create, name="users-create"),
    path("users/<int:pk>/role/", views.user_role, name="users-role"),
    path("users/<int:pk>/deactivate/", views.user_deactivate, name="users-deactivate"),
    path("users/<int:pk>/reactivate/", views.user_reactivate, name="users-reactivate"),
    # --- API tokens (issue 16, part "auth") ---
    path("users/<int:pk>/tokens/", tokens.user_tokens, name="users-tokens"),
    path("users/<int:pk>/tokens/issue/", tokens.user_token_issue, name="users-tokens-issue"),
    path(
        "users/<int:pk>/tokens/<int:token_id>/revoke/",
        tokens.user_token_revoke,
        name="users-tokens-revoke",
    ),
    path("users/unlock/", signin.unlock, name="users-unlock"),
    path("users/<int:pk>/password/", password.user_password_reset, name="users-password"),
    path("account/password/", password.my_password, name="my-password"),
    path("account/tokens/", tokens.my_tokens, name="my-tokens"),
    path("account/tokens/issue/", tokens.my_token_issue, name="my-tokens-issue"),
    path("account/tokens/<int:token_id>/revoke/", tokens.my_token_revoke, name="my-tokens-revoke"),
    # Queue grants and groups (issue 16, tenant admins): web.users.grants.
    path("users/grants/", grants.grant_give, name="users-grant-give"),
    path("users/grants/<int:pk>/revoke/", grants.grant_revoke, name="users-grant-revoke"),
    path("users/groups/", grants.groups_set, name="users-groups"),
]
