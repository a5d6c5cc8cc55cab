from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "scheduler_admin.accounts"
    label = "accounts"

    def ready(self) -> None:
        """Audit sign-in lockouts (axes signals them; scheduler_admin/accounts/signin.py)."""
        from axes.signals import user_locked_out

        from scheduler_admin.accounts.signin import on_locked_out

        user_locked_out.connect(on_locked_out, dispatch_uid="accounts.signin.on_locked_out")
