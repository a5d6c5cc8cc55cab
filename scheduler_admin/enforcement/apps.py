from django.apps import AppConfig


class EnforcementConfig(AppConfig):
    name = "scheduler_admin.enforcement"
    label = "enforcement"

    def ready(self) -> None:
        """A saved config starts, resets and cancels quota timers: queues offers the hook,
        enforcement (above it) registers its receiver (``queues.hooks`` says why)."""
        from scheduler_admin.enforcement.runs.observing import judge_observed_again
        from scheduler_admin.enforcement.timers import apply_config_change
        from scheduler_admin.queues.hooks import on_config_saved

        on_config_saved(apply_config_change)
        # Observe -> enforce: the observed queues and waiting asks are judged again (SPEC 5).
        on_config_saved(judge_observed_again)
