"""Users page routes: the list (GET) and one POST URL per action on a user."""

from django.urls import path

from scheduler_admin.web.users import views

urlpatterns = [
    path("users/", views.user_list, name="users"),
    path("users/create/", views.user_create, name="users-create"),
    path("users/<int:pk>/role/", views.user_role, name="users-role"),
    path("users/<int:pk>/deactivate/", views.user_deactivate, name="users-deactivate"),
    path("users/<int:pk>/reactivate/", views.user_reactivate, name="users-reactivate"),
    path("users/<int:pk>/token/", views.token_issue, name="users-token"),
    path("users/<int:pk>/token/revoke/", views.token_revoke, name="users-token-revoke"),
]
