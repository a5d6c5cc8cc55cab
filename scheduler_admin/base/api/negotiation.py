"""Content negotiation of the export endpoints (the audit's and the runs'), where the path's
suffix (``.csv``, ``.pdf``) already chose the format."""

from __future__ import annotations

from rest_framework.negotiation import BaseContentNegotiation


class SuffixChoosesFormat(BaseContentNegotiation):
    """For exports the path suffix chooses the format (SPEC 7), so ``Accept`` neither picks
    another one nor yields a 406; the first renderer (JSON) renders any error body."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
