"""Which account a single sign-on identity signs in to (issue 16, part "auth").

An identity is the provider's (issuer, subject) pair: ``sub`` never changes for a person at a
provider, while names and e-mail addresses do. The link is made when the account is created at
the identity's first sign-in, and only then: an existing local account (made with a password)
is never taken over by a provider user who happens to have the same name or address.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OidcIdentity(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField()
    last_sign_in_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
