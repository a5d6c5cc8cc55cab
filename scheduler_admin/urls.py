"""URL routes. Everything except sign-in and the health check requires a signed-in user
(``LoginRequiredMiddleware``)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from scheduler_admin.web import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
