from django.urls import path

from scheduler_admin.observability import views

urlpatterns = [
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
]
