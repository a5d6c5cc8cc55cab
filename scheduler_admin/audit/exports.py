"""Audit exports (SPEC 7): CSV and JSON streamed, PDF as a bounded, readable report.

CSV and JSON read the filtered queryset through ``values_list(...).iterator(chunk_size=...)``, so
an export of any size holds one database chunk and one output buffer in memory, never the whole
result (on PostgreSQL ``iterator`` uses a server-side cursor). Rows are buffered into pieces of
about ``STREAM_PIECE_CHARS`` so the server writes a few large pieces rather than one per row.

The PDF is rendered in memory, so it is capped at ``PDF_MAX_ROWS`` (newest first) and says so
when more events matched; the summary counts always cover every matching event. Its text goes
through ``pdftext`` (fonts for every script, Arabic shaping, right-to-left order), with fonts
vendored in ``static/fonts/`` (``_register_fonts``), so names print as the CSV has them.

Every export carries the hash chain's head at export time (``chain.head``: the last event's id
and its hash): in the ``Audit-Chain-Head`` response header (``<event id>:<hash>``) of each, and on
the PDF's first page. Keeping it lets anyone check later that nothing up to that event changed:
``verify_audit --head <event id>:<hash>`` or the API's ``audit/verify?head=``.

Nothing here reads the clock: the caller passes ``now`` (STYLE habit 1).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings
from django.db.models import Count, QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from reportlab.lib import colors
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import (
    BaseDocTemplate,
    Frame,
    NextPageTemplate,
    PageBreak,
    PageTemplate,
    Paragraph,
    Spacer,
    Table,
    TableStyle,
)

from scheduler_admin.audit import chain, pdftext
from scheduler_admin.audit.models import AuditEvent, AuditKind

#: Rows fetched per database round trip while streaming.
CHUNK_SIZE = 2000
#: Roughly how many characters the streams hand to the server at a time.
STREAM_PIECE_CHARS = 64 * 1024
#: The most rows the PDF report lists (newest first).
PDF_MAX_ROWS = 5000
PDF_TITLE = "Scheduler Admin — audit report"

# (model field, exported name), in export order. The JSON export adds the id first.
_EXPORT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("created_at", "created_at"),
    ("kind", "kind"),
    ("actor_name", "actor"),
    ("partition_name", "partition"),
    ("queue_path", "queue"),
    ("object_type", "object_type"),
    ("object_id", "object_id"),
    ("summary", "summary"),
    ("data", "data"),
)
CSV_HEADER: tuple[str, ...] = tuple(name for _, name in _EXPORT_COLUMNS)
JSON_KEYS: tuple[str, ...] = ("id", *CSV_HEADER)

# A spreadsheet evaluates a cell starting with one of these as a formula (OWASP "CSV Injection").
_FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def export_filename(extension: str, now: datetime) -> str:
    """``audit-20240501T120000Z.csv``: the UTC time the export was made."""
    return f"audit-{now.astimezone(UTC):%Y%m%dT%H%M%SZ}.{extension}"


def iso(value: datetime) -> str:
    """UTC ISO 8601 with a ``Z``, as the API's own datetime fields render it."""
    text = value.astimezone(UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def neutralise(cell: str) -> str:
    """Prefix ``'`` to a cell a spreadsheet would read as a formula; other cells are unchanged."""
    return f"'{cell}" if cell.startswith(_FORMULA_TRIGGERS) else cell


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _rows(queryset: QuerySet[AuditEvent], *fields: str) -> Iterator[tuple]:
    return queryset.values_list(*fields).iterator(chunk_size=CHUNK_SIZE)


def _pieces(parts: Iterable[str]) -> Iterator[str]:
    """Join small strings into pieces of about ``STREAM_PIECE_CHARS``."""
    buffer: list[str] = []
    size = 0
    for part in parts:
        buffer.append(part)
        size += len(part)
        if size >= STREAM_PIECE_CHARS:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)


# --- CSV ------------------------------------------------------------------------------------------


def csv_lines(queryset: QuerySet[AuditEvent]) -> Iterator[str]:
    """The header, then one CSV record per event, every cell neutralised."""
    out = io.StringIO()
    # Every cell quoted and every cell neutralised, as OWASP recommends for spreadsheet exports.
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)

    def record(cells: Sequence[str]) -> str:
        writer.writerow([neutralise(cell) for cell in cells])
        line = out.getvalue()
        out.seek(0)
        out.truncate()
        return line

    yield record(CSV_HEADER)
    for row in _rows(queryset, *(field for field, _ in _EXPORT_COLUMNS)):
        created_at, *texts, data = row
        yield record([iso(created_at), *texts, _json_text(data)])


def csv_response(queryset: QuerySet[AuditEvent], *, now: datetime) -> StreamingHttpResponse:
    chain_head = chain.head()  # before the rows: every event it covers is committed
    response = StreamingHttpResponse(
        _pieces(csv_lines(queryset)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{export_filename("csv", now)}"'
    response[HEAD_HEADER] = chain_head.as_text()
    return response


# --- JSON -----------------------------------------------------------------------------------------


def json_parts(queryset: QuerySet[AuditEvent]) -> Iterator[str]:
    """A JSON array of event objects, written element by element (``[]`` when empty)."""
    yield "["
    separator = ""
    for row in _rows(queryset, "id", *(field for field, _ in _EXPORT_COLUMNS)):
        event = dict(zip(JSON_KEYS, row, strict=True))
        event["created_at"] = iso(event["created_at"])
        yield separator + json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        separator = ",\n"
    yield "]\n"


def json_response(queryset: QuerySet[AuditEvent], *, now: datetime) -> StreamingHttpResponse:
    chain_head = chain.head()
    response = StreamingHttpResponse(
        _pieces(json_parts(queryset)), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{export_filename("json", now)}"'
    response[HEAD_HEADER] = chain_head.as_text()
    return response


# --- PDF ------------------------------------------------------------------------------------------

_FONT, _FONT_BOLD, _FONT_CJK = "AuditSans", "AuditSans-Bold", "AuditCJK"
#: The report's fonts, vendored with their licences (see ``_register_fonts``).
FONTS_DIR = settings.BASE_DIR / "static" / "fonts"
_FONT_FILES = {
    _FONT: "DejaVuSans.ttf",
    _FONT_BOLD: "DejaVuSans-Bold.ttf",
    _FONT_CJK: "DroidSansFallback.ttf",
}
#: Event rows per table flowable. One long table costs reportlab time that grows faster than its
#: rows (each page split re-measures the remainder); short tables keep the report linear.
_ROWS_PER_TABLE = 40
#: Longest summary printed in the PDF, so that no row is taller than a page.
_PDF_SUMMARY_CHARS = 1000
#: The most old → new lines the PDF prints for one config change (then "and N more").
_PDF_CHANGES = 12
#: The response header carrying the chain's head at export time.
HEAD_HEADER = "Audit-Chain-Head"
_CONTROL_CHARS = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127], " ")

_PAGE = landscape(A4)
_MARGIN = 12 * mm
_WIDTH = _PAGE[0] - 2 * _MARGIN
_EVENT_COLUMNS = [32 * mm, 38 * mm, 30 * mm, 50 * mm]
_EVENT_COLUMNS.append(_WIDTH - sum(_EVENT_COLUMNS))
_CELL_PADDING = 4
_HEADINGS = ("Time (UTC)", "Kind", "Actor", "Queue", "Summary")


def _register_fonts() -> None:
    """Register the report's TrueType fonts (reportlab embeds the glyphs a report uses).

    reportlab's bundled fonts (Vera) have no Hebrew, Arabic or CJK glyphs: such names came out
    as empty boxes. DejaVu Sans (Vera's Latin, plus Greek, Cyrillic, Hebrew and Arabic with its
    presentation forms, which ``pdftext.shape_arabic`` uses) is the normal font, and Droid Sans
    Fallback (Chinese, Japanese, Korean) takes the characters DejaVu lacks. Both are vendored in
    ``static/fonts/`` (about 5 MB, licences beside them), so nothing is installed or fetched.
    """
    if _FONT in pdfmetrics.getRegisteredFontNames():
        return
    for name, file_name in _FONT_FILES.items():
        pdfmetrics.registerFont(TTFont(name, str(FONTS_DIR / file_name)))
    pdfmetrics.registerFontFamily(_FONT, normal=_FONT, bold=_FONT_BOLD)


@cache
def _glyphs(font_name: str) -> frozenset[int]:
    """The code points ``font_name`` has a glyph for."""
    return frozenset(pdfmetrics.getFont(font_name).face.charToGlyph)


@cache
def _font_chain(font_name: str) -> tuple[tuple[str, Callable[[str], bool]], ...]:
    """The fonts a text in ``font_name`` falls back to, each with its has-a-glyph test."""
    names = dict.fromkeys([font_name, _FONT, _FONT_CJK])
    return tuple((name, lambda char, name=name: ord(char) in _glyphs(name)) for name in names)


def _needs_layout(text: str, font_name: str) -> bool:
    """Whether ``text`` has a character the font lacks or one that reads right to left."""
    glyphs = _glyphs(font_name)
    return pdftext.has_right_to_left(text) or any(ord(char) not in glyphs for char in text)


def _markup(text: str, style: ParagraphStyle, width: float) -> tuple[str, bool]:
    """Paragraph markup for ``text`` in lines at most ``width`` wide, and whether the text
    reads right to left (``pdftext`` says how; only fallback fonts get a ``<font>`` span)."""
    chain = _font_chain(style.fontName)

    def has_glyph(char: str) -> bool:
        return any(has(char) for _, has in chain)

    def measure(line: str) -> float:
        return sum(
            pdfmetrics.stringWidth(run, font, style.fontSize)
            for font, run in pdftext.font_runs(line, chain)
        )

    def spans(line: str) -> str:
        return "".join(
            escape(run) if font == style.fontName else f'<font name="{font}">{escape(run)}</font>'
            for font, run in pdftext.font_runs(line, chain)
        )

    shaped = pdftext.shape_arabic(text, has_glyph)
    if not pdftext.has_right_to_left(shaped):
        return spans(shaped), False
    level = pdftext.base_level(shaped)
    lines = pdftext.logical_lines(shaped, width, measure)
    return "<br/>".join(spans(pdftext.visual_order(line, level)) for line in lines), bool(level)


class _Styles:
    def __init__(self) -> None:
        self.body = ParagraphStyle("body", fontName=_FONT, fontSize=9, leading=11.5)
        self.cell = ParagraphStyle("cell", parent=self.body, fontSize=7.5, leading=9.5)
        self.head = ParagraphStyle("head", parent=self.cell, fontName=_FONT_BOLD)
        self.title = ParagraphStyle(
            "title", parent=self.body, fontName=_FONT_BOLD, fontSize=16, leading=20
        )
        self.heading = ParagraphStyle(
            "heading",
            parent=self.body,
            fontName=_FONT_BOLD,
            fontSize=11,
            leading=14,
            spaceBefore=8,
            spaceAfter=2,
        )
        self.grid = TableStyle(
            [
                # For plain-string cells; Paragraph cells carry their own style.
                ("FONT", (0, 0), (-1, -1), _FONT, self.cell.fontSize, self.cell.leading),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
                ("LEFTPADDING", (0, 0), (-1, -1), _CELL_PADDING),
                ("RIGHTPADDING", (0, 0), (-1, -1), _CELL_PADDING),
                ("TOPPADDING", (0, 0), (-1, -1), 2),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
            ]
        )
        self.grid_with_head = TableStyle(
            [("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8e8e8"))], parent=self.grid
        )


def _para(text: str, style: ParagraphStyle, width: float = _WIDTH) -> Paragraph:
    """Text as a Paragraph ``width`` wide: escaped (a summary's ``<b>`` is text, not markup),
    control characters blanked (the paragraph parser rejects some), other scripts laid out by
    ``_markup``; right-aligned when it reads right to left."""
    text = " ".join(text.translate(_CONTROL_CHARS).split())  # a Paragraph collapses it too
    if text.isascii() or not _needs_layout(text, style.fontName):
        return Paragraph(escape(text), style)
    markup, right_to_left = _markup(text, style, width)
    if right_to_left:
        style = ParagraphStyle(f"{style.name}-rtl", parent=style, alignment=TA_RIGHT)
    return Paragraph(markup, style)


def pdf_report(
    queryset: QuerySet[AuditEvent],
    filters: Sequence[tuple[str, str]],
    *,
    now: datetime,
    max_rows: int | None = None,
    chain_head: chain.Head | None = None,
) -> bytes:
    """Render the report and return the PDF's bytes.

    Steps: count the matching events per kind (over all of them); read at most ``max_rows``
    (default ``PDF_MAX_ROWS``) of them, newest first; lay out a first page with the title,
    generation time, the chain's head (``chain_head``, read now when not given), filters, counts
    and a note saying whether the list is complete; then the
    event pages, whose column headings are drawn by the page template (so they repeat on every
    page while the rows come in short tables); number every page in the footer.
    """
    _register_fonts()
    max_rows = PDF_MAX_ROWS if max_rows is None else max_rows
    chain_head = chain.head() if chain_head is None else chain_head
    styles = _Styles()
    counts = list(
        queryset.order_by().values_list("kind").annotate(total=Count("id")).order_by("kind")
    )
    matched = sum(total for _, total in counts)
    rows = list(
        queryset.values_list(
            "created_at", "kind", "actor_name", "partition_name", "queue_path", "summary", "data"
        )[:max_rows]
    )

    story: list[Any] = [
        _para(PDF_TITLE, styles.title),
        Spacer(1, 2 * mm),
        _para(f"Generated {now.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC", styles.body),
        _para(
            f"Audit chain head: event {chain_head.event_id or 'none'}, "
            f"hash {chain_head.hash} ({chain_head.length:,} events chained)",
            styles.body,
        ),
        _para("Filters", styles.heading),
    ]
    if filters:
        story += [_para(f"{name}: {value}", styles.body) for name, value in filters]
    else:
        story.append(_para("none", styles.body))
    story += [_para("Summary", styles.heading), _summary_table(counts, matched, styles)]
    story.append(_para("Events", styles.heading))
    if not rows:
        story.append(_para("No events match.", styles.body))
    elif len(rows) < matched:
        story.append(
            _para(
                f"Truncated: showing the newest {len(rows):,} of {matched:,} matching events "
                "(on the following pages). Use the CSV or JSON export for all of them.",
                styles.body,
            )
        )
    else:
        story.append(
            _para(
                f"All {matched:,} matching events, newest first, on the following pages.",
                styles.body,
            )
        )
    if rows:
        story += [NextPageTemplate("events"), PageBreak()]
        story += _event_tables(rows, styles)

    output = io.BytesIO()
    _document(output, now, styles).build(story, canvasmaker=_NumberedCanvas)
    return output.getvalue()


class _NumberedCanvas(Canvas):
    """A canvas that ends every page with "Page N of M".

    The page count is known only once the whole story is laid out, so each finished page is
    kept (its drawing state, which holds the page's content) instead of being written at once;
    ``save`` then adds the footer to each and writes them all. The kept pages cost memory in
    proportion to the report, which ``PDF_MAX_ROWS`` bounds.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pages: list[dict[str, Any]] = []

    def showPage(self) -> None:  # reportlab's name
        self._pages.append(dict(self.__dict__))
        self._startPage()

    def save(self) -> None:
        total = len(self._pages)
        for page in self._pages:
            self.__dict__.update(page)
            self.saveState()
            self.setFont(_FONT, 8)
            self.drawRightString(
                _PAGE[0] - _MARGIN, 8 * mm, f"Page {self.getPageNumber()} of {total}"
            )
            self.restoreState()
            super().showPage()
        super().save()


def _summary_table(counts: list[tuple[str, int]], matched: int, styles: _Styles) -> Table:
    labels = dict(AuditKind.choices)
    cell, head = styles.cell, styles.head
    data = [[_para("Kind", head), _para("Description", head), _para("Events", head)]]
    data += [
        [_para(kind, cell), _para(labels.get(kind, ""), cell), _para(f"{n:,}", cell)]
        for kind, n in counts
    ]
    data.append([_para("Total", head), _para("", cell), _para(f"{matched:,}", head)])
    table = Table(data, colWidths=[55 * mm, 70 * mm, 25 * mm], hAlign="LEFT")
    table.setStyle(styles.grid_with_head)
    return table


def _event_tables(rows: list[tuple], styles: _Styles) -> list[Table]:
    tables = []
    for start in range(0, len(rows), _ROWS_PER_TABLE):
        data = []
        for created_at, kind, actor, partition, queue, summary, details in rows[
            start : start + _ROWS_PER_TABLE
        ]:
            where = f"{partition}: {queue}" if partition and queue else partition or queue
            if len(summary) > _PDF_SUMMARY_CHARS:
                summary = summary[: _PDF_SUMMARY_CHARS - 1] + "…"
            texts = (f"{created_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}", kind, actor, where)
            row = [
                _cell(text, width, styles.cell)
                for text, width in zip(texts, _EVENT_COLUMNS[:-1], strict=True)
            ]
            lines = change_lines(details)
            if lines:
                row.append(_lines_cell([summary, *lines], _EVENT_COLUMNS[-1], styles.cell))
            else:
                row.append(_cell(summary, _EVENT_COLUMNS[-1], styles.cell))
            data.append(row)
        table = Table(data, colWidths=_EVENT_COLUMNS, hAlign="LEFT")
        table.setStyle(styles.grid)
        tables.append(table)
    return tables


def change_lines(data: Any) -> list[str]:
    """What an auditor reads of a config change beside its summary: the comment, then each
    changed value as ``queue field: old → new`` (at most ``_PDF_CHANGES``, then how many more).
    Events without them (every other kind) give no lines."""
    if not isinstance(data, dict):
        return []
    lines = []
    comment = data.get("comment")
    if isinstance(comment, str) and comment.strip():
        lines.append(f"Comment: {comment.strip()}")
    changes = data.get("changes")
    if isinstance(changes, list):
        for change in changes[:_PDF_CHANGES]:
            if isinstance(change, dict):
                old, new = _shown(change.get("old")), _shown(change.get("new"))
                lines.append(f"{change.get('queue', '')} {change.get('field', '')}: {old} → {new}")
        if len(changes) > _PDF_CHANGES:
            lines.append(f"and {len(changes) - _PDF_CHANGES:,} more changes (see the JSON export)")
    return lines


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "(none)"
    return value if isinstance(value, str) else _json_text(value)


def _lines_cell(lines: list[str], width: float, style: ParagraphStyle) -> Table:
    """Several lines in one cell, each laid out like a summary (scripts, right to left)."""
    inner = width - 2 * _CELL_PADDING
    table = Table([[_para(line, style, inner)] for line in lines], colWidths=[inner])
    table.setStyle(
        TableStyle(
            [
                ("LEFTPADDING", (0, 0), (-1, -1), 0),
                ("RIGHTPADDING", (0, 0), (-1, -1), 0),
                ("TOPPADDING", (0, 0), (-1, -1), 0),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 1),
            ]
        )
    )
    return table


def _cell(text: str, width: float, style: ParagraphStyle) -> str | Paragraph:
    """A plain string when the text fits on one line in the normal font, reading left to right,
    else a Paragraph. Most cells are such strings, which cost reportlab far less to lay out."""
    text = " ".join(text.translate(_CONTROL_CHARS).split())
    inner = width - 2 * _CELL_PADDING
    if (text.isascii() or not _needs_layout(text, style.fontName)) and pdfmetrics.stringWidth(
        text, style.fontName, style.fontSize
    ) <= inner:
        return text
    return _para(text, style, inner)


def _document(output: io.BytesIO, now: datetime, styles: _Styles) -> BaseDocTemplate:
    """A first-page template, and an event-page template that draws the column headings above
    its frame; both draw the footer with the page number."""
    generated = f"{now.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    top = _PAGE[1] - _MARGIN
    bottom = 16 * mm
    headings = Table([[_para(text, styles.head) for text in _HEADINGS]], colWidths=_EVENT_COLUMNS)
    headings.setStyle(styles.grid_with_head)
    _, headings_height = headings.wrap(_WIDTH, top - bottom)

    def footer(canvas: Any, doc: BaseDocTemplate) -> None:
        # "Page N of M" is drawn by _NumberedCanvas, once M is known.
        canvas.saveState()
        canvas.setFont(_FONT, 8)
        canvas.drawString(_MARGIN, 8 * mm, f"{PDF_TITLE} · generated {generated}")
        canvas.restoreState()

    def event_page(canvas: Any, doc: BaseDocTemplate) -> None:
        footer(canvas, doc)
        headings.drawOn(canvas, _MARGIN, top - headings_height)

    def frame(height: float, name: str) -> Frame:
        # No padding, so the rows' grid lines meet the headings' exactly.
        return Frame(
            _MARGIN,
            bottom,
            _WIDTH,
            height,
            id=name,
            leftPadding=0,
            rightPadding=0,
            topPadding=0,
            bottomPadding=0,
        )

    return BaseDocTemplate(
        output,
        pagesize=_PAGE,
        title=PDF_TITLE,
        author="Scheduler Admin",
        pageTemplates=[
            PageTemplate("first", [frame(top - bottom, "first")], onPage=footer),
            PageTemplate(
                "events", [frame(top - bottom - headings_height, "events")], onPage=event_page
            ),
        ],
    )


def pdf_response(
    queryset: QuerySet[AuditEvent], filters: Sequence[tuple[str, str]], *, now: datetime
) -> HttpResponse:
    chain_head = chain.head()
    response = HttpResponse(
        pdf_report(queryset, filters, now=now, chain_head=chain_head),
        content_type="application/pdf",
    )
    response["Content-Disposition"] = f'attachment; filename="{export_filename("pdf", now)}"'
    response[HEAD_HEADER] = chain_head.as_text()
    return response
