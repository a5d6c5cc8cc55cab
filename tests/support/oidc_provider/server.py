"""Start the test OpenID Connect provider (``tests.support.oidc_provider``) as a real process.

``OidcProvider(log_dir, redirect_uri)`` as a context manager: a new RSA key (generated here,
written to a file only the provider reads), a fresh SQLite database migrated with the product
registered as its client, and gunicorn serving it on a free loopback port. ``product_env``
gives the ``OIDC_*`` variables that point the product at it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import TracebackType

from tests.support.processes import (
    PROJECT_DIR,
    ManagedProcess,
    free_port,
    venv_executable,
    wait_until,
)

CLIENT_ID = "scheduler-admin"


def _rsa_private_key_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


class OidcProvider:
    """The provider process; ``issuer`` is its issuer URL (``http://127.0.0.1:<port>/o``)."""

    def __init__(self, log_dir: Path, redirect_uri: str) -> None:
        self.log_dir = log_dir
        self.redirect_uri = redirect_uri
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.issuer = f"{self.origin}/o"
        self.client_secret = secrets.token_urlsafe(24)
        key_file = log_dir / "oidc-provider-key.pem"
        key_file.write_text(_rsa_private_key_pem())
        key_file.chmod(0o600)
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.support.oidc_provider.settings",
            "OIDC_PROVIDER_DB": str(log_dir / "oidc-provider.sqlite3"),
            "OIDC_PROVIDER_ISSUER": self.issuer,
            "OIDC_PROVIDER_KEY_FILE": str(key_file),
            "PYTHONPATH": str(PROJECT_DIR),
            "PYTHONUNBUFFERED": "1",
        }
        self.process = ManagedProcess(
            "oidc-provider",
            [
                venv_executable("gunicorn"),
                "tests.support.oidc_provider.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
            ],
            env={**self.env, "XDG_RUNTIME_DIR": str(log_dir)},
            log_dir=log_dir,
        )

    def manage(self, *args: str) -> None:
        """Run ``tests.support.oidc_provider.manage`` with the provider's settings."""
        subprocess.run(
            [sys.executable, "-m", "tests.support.oidc_provider.manage", *args],
            env=self.env,
            cwd=PROJECT_DIR,
            check=True,
            capture_output=True,
            timeout=120,
        )

    def add_user(self, name: str, password: str, groups: list[str]) -> None:
        self.manage("user", name, password, f"{name}@example.org", *groups)

    def set_groups(self, name: str, groups: list[str]) -> None:
        self.manage("groups", name, *groups)

    def product_env(self, role_groups: str, provider_name: str = "TestIdP") -> dict[str, str]:
        return {
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "OIDC_OP_ISSUER": self.issuer,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.issuer}/authorize/",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.issuer}/token/",
            "OIDC_OP_USER_ENDPOINT": f"{self.issuer}/userinfo/",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.issuer}/.well-known/jwks.json",
            "OIDC_ROLE_GROUPS": role_groups,
            "OIDC_PROVIDER_NAME": provider_name,
        }

    def _discovery_answers(self) -> bool:
        url = f"{self.issuer}/.well-known/openid-configuration"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback)
                return response.status == 200
        except OSError:
            return False

    def __enter__(self) -> OidcProvider:
        self.manage("setup", CLIENT_ID, self.client_secret, self.redirect_uri)
        self.process.start()
        wait_until(
            self._discovery_answers, 30, message="the OIDC provider never answered",
            watch=[self.process],
        )  # fmt: skip
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.process.stop()
