from django.urls import path

from scheduler_admin.web.placeholder import not_built

urlpatterns = [
    path("simulator/", not_built, name="simulator"),
]
