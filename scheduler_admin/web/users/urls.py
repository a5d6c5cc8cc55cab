"""Users page routes: the list (GET) and one POST URL per action on a user."""

from django.urls import path

from scheduler_admin.web.users import grants, views

urlpatterns = [
    path("users/", views.user_list, name="users"),
    path("users/create/", views.user_create, name="users-create"),
    path("users/<int:pk>/role/", views.user_role, name="users-role"),
    path("users/<int:pk>/deactivate/", views.user_deactivate, name="users-deactivate"),
    path("users/<int:pk>/reactivate/", views.user_reactivate, name="users-reactivate"),
    path("users/<int:pk>/token/", views.token_issue, name="users-token"),
    path("users/<int:pk>/token/revoke/", views.token_revoke, name="users-token-revoke"),
    # Queue grants and groups (issue 16, tenant admins): web.users.grants.
    path("users/grants/", grants.grant_give, name="users-grant-give"),
    path("users/grants/<int:pk>/revoke/", grants.grant_revoke, name="users-grant-revoke"),
    path("users/groups/", grants.groups_set, name="users-groups"),
]
