from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "scheduler_admin.accounts"
    label = "accounts"
