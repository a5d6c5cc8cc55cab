from django.urls import path

from scheduler_admin.web.timers.views import timer_cancel

urlpatterns = [
    path("timers/<int:pk>/cancel/", timer_cancel, name="timer-cancel"),
]
