"""The Users page (admins): accounts, roles and API tokens."""
