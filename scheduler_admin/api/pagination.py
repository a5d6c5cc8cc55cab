"""Page-number pagination whose parameters are checked: ``?page=`` and ``?page_size=`` that
are not whole numbers (``"²"``, ``"-1"``, ``"x"``) are a 400 naming the parameter; a page past
the end is a 404 (``next`` is null on the last page)."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from scheduler_admin.api.params import is_whole_number


class StandardPagination(PageNumberPagination):
    """``?page=N&page_size=M`` (at most 1000; larger sizes are cut to 1000); lists are ordered
    so pages are stable."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        raw = request.query_params.get(self.page_query_param)
        if not raw or raw in self.last_page_strings:
            return raw or 1
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
