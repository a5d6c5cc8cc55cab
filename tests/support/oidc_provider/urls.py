"""The provider's pages: OAuth 2 / OIDC under ``/o/`` and a plain sign-in page."""

from django.contrib.auth.views import LoginView
from django.urls import include, path

urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("accounts/login/", LoginView.as_view(template_name="provider_login.html")),
]
