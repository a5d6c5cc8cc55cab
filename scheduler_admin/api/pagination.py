from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    """``?page=N&page_size=M`` (at most 1000); lists are ordered so pages are stable."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000
