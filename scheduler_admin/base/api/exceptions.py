"""API errors that carry field errors of their own: a body that cannot be read (400) or is too
large (413). Rendered by ``base.api.errors.exception_handler`` with the one error body.

A module of its own because parsers raise them, and parsers are loaded while DRF's views module
is still importing (``DEFAULT_PARSER_CLASSES``), before ``errors`` could be imported.
"""

from __future__ import annotations

from rest_framework import exceptions, status


class ErrorWithFields(exceptions.APIException):
    """An API error whose body lists field errors, ``{path: [messages]}``."""

    def __init__(self, errors: dict[str, list[str]], detail: str | None = None) -> None:
        super().__init__(detail or self.default_detail, self.default_code)
        self.errors = errors


class InvalidBody(ErrorWithFields):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "The request body is not valid."
    default_code = "invalid"


class PayloadTooLarge(ErrorWithFields):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


class InvalidQuery(ErrorWithFields):
    """Query parameters the operation does not take, or values its schema rules out."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "The query parameters are not valid: nothing was done."
    default_code = "invalid"
