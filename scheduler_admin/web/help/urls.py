from django.urls import path

from scheduler_admin.web.help import views

urlpatterns = [
    path("docs/", views.docs_page, name="docs"),
    path("docs/<path:page>", views.docs_page, name="docs-page"),
]
