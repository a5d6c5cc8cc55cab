from django.urls import path

from scheduler_admin.web.partition_settings.views import partition_settings

urlpatterns = [
    path("partitions/<str:partition>/settings/", partition_settings, name="partition-settings"),
]
