"""Page-number pagination whose parameters are checked: ``?page=`` and ``?page_size=`` that
are not whole numbers from 1 (``"²"``, ``"-1"``, ``"0"``, ``"x"``, ``"last"``) are a 400 naming
the parameter; a page past the end is a 404 (``next`` is null on the last page). The schema says
the same (``minimum: 1``; an empty value is the parameter left out)."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from scheduler_admin.base.api.params import is_whole_number


class StandardPagination(PageNumberPagination):
    """``?page=N&page_size=M`` (at most 1000; larger sizes are cut to 1000); lists are ordered
    so pages are stable."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000

    #: No ``?page=last``: the schema's page is a number, and so is the server's.
    last_page_strings = ()

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        raw = request.query_params.get(self.page_query_param)
        if not raw:
            return 1
        if not is_whole_number(raw) or raw.lstrip("0") == "":
            raise ValidationError(
                {self.page_query_param: ["must be a page number: a whole number from 1"]}
            )
        return int(raw.lstrip("0")[:20])  # a longer number is past the last page anyway: 404

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if not raw:
            return self.page_size
        if not is_whole_number(raw) or raw.lstrip("0") == "":
            raise ValidationError(
                {
                    self.page_size_query_param: [
                        f"must be a whole number from 1 to {self.max_page_size}"
                    ]
                }
            )
        return min(
            int(raw.lstrip("0")[:20]), self.max_page_size
        )  # larger sizes are cut, as documented

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.page_query_param,
                "required": False,
                "in": "query",
                "description": "A page number, from 1 (past the last page: 404).",
                "schema": {"type": "integer", "minimum": 1},
                "allowEmptyValue": True,
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Rows per page, from 1 (default {self.page_size}; a larger "
                f"size than {self.max_page_size} is cut to {self.max_page_size}).",
                "schema": {"type": "integer", "minimum": 1},
                "allowEmptyValue": True,
            },
        ]
