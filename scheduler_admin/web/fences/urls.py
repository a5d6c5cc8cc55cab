from django.urls import path

from scheduler_admin.web.placeholder import not_built

urlpatterns = [
    path("fences/", not_built, name="fences"),
]
