"""Token endpoint: exchange a username and password for a new named API token (throttled)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import exceptions
from rest_framework import serializers as drf_serializers
from rest_framework.authtoken import serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler_admin.accounts import services, tokens
from scheduler_admin.accounts.tokens import ApiToken
from scheduler_admin.base.api.parsers import SafeJSONParser
from scheduler_admin.base.api.query import QueryContract
from scheduler_admin.base.api.strict import StrictFields
from scheduler_admin.base.api.throttling import TokenRateThrottle
from scheduler_admin.base.limits import USERNAME_MAX_LENGTH


class AuthTokenSerializer(StrictFields, serializers.AuthTokenSerializer):
    """DRF's ``username`` and ``password`` (checked by ``authenticate``, so failed attempts are
    counted by the sign-in throttle), an optional token ``name``; any other field is refused.

    Wrong credentials are a 401 (``AuthenticationFailed``), not DRF's 400: the request was
    well formed, the credentials were refused. A missing or malformed field stays a 400 naming
    it."""

    username = drf_serializers.CharField(
        label="Username", write_only=True, max_length=USERNAME_MAX_LENGTH
    )

    name = drf_serializers.CharField(
        required=False,
        max_length=tokens.NAME_MAX_LENGTH,
        default="api",
        help_text="The token's name (default `api`). A token of yours with the same name is "
        "replaced.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        user = authenticate(
            request=self.context.get("request"),
            username=attrs["username"],
            password=attrs["password"],
        )
        if user is None:  # wrong password, unknown or deactivated user, or locked out (429)
            raise exceptions.AuthenticationFailed(
                "Unable to sign in with the user name and password given.", code="signin_failed"
            )
        attrs["user"] = user
        return attrs


TokenIssued = inline_serializer(
    "TokenIssued",
    {
        "token": drf_serializers.CharField(help_text="The key, shown this once."),
        "name": drf_serializers.CharField(),
        "expires_at": drf_serializers.DateTimeField(allow_null=True),
    },
)


@extend_schema_view(
    post=extend_schema(
        summary="Exchange a username and password for a new API token",
        description="Issues a new token named `name` (default `api`), replacing a token of "
        "yours with that name, expiring after API_TOKEN_EXPIRY_DAYS. Send it as "
        "`Authorization: Token <token>`. The key is shown only in this answer. A wrong user "
        "name or password answers 401. Throttled per client address (API_TOKEN_RATE); "
        "repeated failed sign-ins of one user name from one address lock that user name "
        "there, and many from one address lock the address, for SIGNIN_LOCKOUT_MINUTES "
        "(429).",
        request=AuthTokenSerializer,
        responses=TokenIssued,
    )
)
class ObtainTokenView(APIView):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password`` (and ``name``) ->
    ``{"token", "name", "expires_at"}``. Forms are accepted too, as DRF's view does."""

    permission_classes = [AllowAny, QueryContract]  # no role needed; the query string checked
    throttle_classes = [TokenRateThrottle]
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]
    serializer_class = AuthTokenSerializer

    def post(self, request: Request) -> Response:
        # Django's request, not DRF's wrapper: the sign-in throttle (axes) marks a locked-out
        # attempt on it, and its middleware answers 429 (accounts.signin.lockout_response).
        serializer = AuthTokenSerializer(data=request.data, context={"request": request._request})
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        name = serializer.validated_data["name"]
        try:
            key = services.issue_token(user, actor=user, name=name)
        except services.AccountError as exc:
            raise drf_serializers.ValidationError({exc.field or "name": [str(exc)]}) from None
        token = ApiToken.objects.get(user=user, name=name.strip())
        return Response({"token": key, "name": token.name, "expires_at": token.expires_at})
