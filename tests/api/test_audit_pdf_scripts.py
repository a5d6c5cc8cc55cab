"""The PDF audit report prints every name as the CSV has it, in any script (issue 13, section 3).

Actors ``管理者`` and ``עדי`` came out as empty boxes: reportlab's bundled font has no CJK,
Hebrew or Arabic glyphs. Two checks on the exported PDF:

- with the PDF alone (stdlib and reportlab): every character drawn (each string shown in the
  page contents, decoded with its font's ToUnicode table) has a glyph in the vendored font it
  is drawn with, so nothing is drawn as .notdef; the CJK name is in the CJK fallback font, the
  Hebrew and Arabic in the normal font, Arabic in its joined forms;
- with ``pdftotext``: the names read back as the CSV has them (Arabic is drawn in its shaped
  presentation forms, which NFKC maps back to the letters; pdftotext marks right-to-left runs
  with embedding controls, which are dropped). Without poppler-utils it is skipped, loudly,
  except under ``CI=true`` where it fails.

And the footer reads "Page N of M" on a report of several pages.
"""

from __future__ import annotations

import base64
import csv
import io
import os
import re
import shutil
import subprocess
import unicodedata
import zlib
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from reportlab.pdfbase.ttfonts import TTFontFile

from scheduler_admin.audit import exports
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import record_event

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NAMES = ("管理者", "עדי", "مدير")
SUMMARIES = {
    "管理者": "Quota of root.a changed by 管理者 for 研究チーム",
    "עדי": "עדי שינתה את המכסה",
    "مدير": "قام مدير بتغيير الحصة",
}
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
#: Directional formatting characters pdftotext puts around right-to-left runs.
BIDI_CONTROLS = dict.fromkeys([*range(0x202A, 0x202F), 0x200E, 0x200F, *range(0x2066, 0x206A)])


@pytest.fixture
def scripts_events() -> None:
    """One event by each user whose name is in another script, plus Latin ones."""
    users = get_user_model().objects
    for minute, name in enumerate(NAMES):
        record_event(
            AuditKind.CONFIG_CHANGED, actor=users.create_user(name), summary=SUMMARIES[name],
            partition_name="default", queue_path="root.a", at=T0 + timedelta(minutes=minute),
        )  # fmt: skip
    record_event(AuditKind.CONFIG_CHANGED, actor=None, summary="Plain café", at=T0)


def pdf_objects(pdf: bytes) -> dict[int, tuple[bytes, bytes | None]]:
    """Each object of a reportlab PDF: number -> (dictionary, decoded stream or None)."""
    objects = {}
    for match in re.finditer(rb"(\d+) 0 obj\s*(<<.*?>>)\s*(stream\r?\n)?", pdf, re.S):
        stream = None
        if match.group(3):
            stream = pdf[match.end() : pdf.index(b"endstream", match.end())]
            if b"/ASCII85Decode" in match.group(2):
                stream = base64.a85decode(stream.strip(), adobe=True)
            if b"/FlateDecode" in match.group(2):
                stream = zlib.decompress(stream)
        objects[int(match.group(1))] = (match.group(2), stream)
    return objects


def _literal(string: bytes) -> bytes:
    """A PDF literal string's bytes: reportlab escapes a backslash, parentheses and other
    bytes (octal) with a backslash."""
    return re.sub(
        rb"\\([0-7]{1,3}|.)",
        lambda m: bytes([int(m.group(1), 8)]) if m.group(1).isdigit() else m.group(1),
        string,
    )


def drawn_characters(pdf: bytes) -> dict[str, set[str]]:
    """Font (without the subset prefix) -> the characters drawn with it: each ``Tj`` string of
    the page contents, decoded with its font's ToUnicode table."""
    objects = pdf_objects(pdf)
    fonts: dict[bytes, tuple[str, dict[int, str]]] = {}
    for resource, number in re.findall(rb"/(F\d+\+\d+) (\d+) 0 R", pdf):
        dictionary = objects[int(number)][0]
        name = re.search(rb"/BaseFont /[A-Z]{6}\+(\S+)", dictionary).group(1).decode()
        to_unicode = int(re.search(rb"/ToUnicode (\d+) 0 R", dictionary).group(1))
        cmap = objects[to_unicode][1] or b""
        assert b"beginbfrange" not in cmap, "this test reads bfchar entries only"
        [entries] = re.findall(rb"beginbfchar(.*?)endbfchar", cmap, re.S)
        pairs = re.findall(rb"<([0-9A-F]+)> <([0-9A-F]+)>", entries)
        codes = {int(c, 16): bytes.fromhex(u.decode()).decode("utf-16-be") for c, u in pairs}
        fonts[resource] = (name, codes)
    drawn: dict[str, set[str]] = {}
    for _, stream in objects.values():
        font = None
        for operator in re.finditer(rb"/(F\S+) [\d.]+ Tf|\(((?:\\.|[^\\)])*)\) Tj", stream or b""):
            if operator.group(1):
                font = fonts.get(operator.group(1))
            elif font is not None:
                name, codes = font
                drawn.setdefault(name, set()).update(
                    codes[code] for code in _literal(operator.group(2))
                )
    return drawn


def test_every_character_of_the_pdf_has_a_glyph_in_its_font(viewer, scripts_events):
    filtered = viewer.get("/api/v1/audit/export.pdf", {"actor": "עדי"}).content
    everything = viewer.get("/api/v1/audit/export.pdf").content

    for content in (filtered, everything):
        for name, chars in drawn_characters(content).items():
            glyphs = TTFontFile(str(exports.FONTS_DIR / f"{name}.ttf")).charToGlyph
            missing = sorted(c for c in chars if ord(c) not in glyphs)
            assert missing == [], f"{name} has no glyph for {missing}: drawn as .notdef"
    fonts = drawn_characters(everything)
    assert set(fonts) == {"DejaVuSans", "DejaVuSans-Bold", "DroidSansFallback"}
    assert fonts["DroidSansFallback"] == set("管理者研究チーム")  # only what DejaVu lacks
    assert set("עדי") <= fonts["DejaVuSans"]  # Hebrew, and Arabic in its shaped forms:
    assert {unicodedata.normalize("NFKC", c) for c in fonts["DejaVuSans"]} >= set("مدير")
    assert "م" not in fonts["DejaVuSans"]  # not a lone letter: shaped


def pdf_text(content: bytes, tmp_path) -> str:
    if shutil.which("pdftotext") is None:
        reason = "pdftotext (poppler-utils) is not on PATH: the PDF's text cannot be read back"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    path = tmp_path / "report.pdf"
    path.write_bytes(content)
    text = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True
    ).stdout
    return unicodedata.normalize("NFKC", text.translate(BIDI_CONTROLS))


def test_names_read_back_from_the_pdf_as_the_csv_has_them(viewer, scripts_events, tmp_path):
    csv_text = b"".join(viewer.get("/api/v1/audit/export.csv").streaming_content).decode()
    actors = [row["actor"] for row in csv.DictReader(io.StringIO(csv_text))]
    assert set(NAMES) <= set(actors)

    text = pdf_text(viewer.get("/api/v1/audit/export.pdf").content, tmp_path)

    rows = [line.split() for line in text.splitlines() if "config.changed" in line]
    for name in NAMES:
        # The actor column, as a word of its own (in logical order, joined letters).
        assert any(name in row for row in rows), (name, text)
    assert "研究チーム" in text and "Plain café" in text
    assert "עדי שינתה את המכסה" in text
    assert "قام مدير بتغيير الحصة" in text


def test_a_filter_on_a_right_to_left_name_reads_back_in_the_filters(
    viewer, scripts_events, tmp_path
):
    text = pdf_text(viewer.get("/api/v1/audit/export.pdf", {"actor": "עדי"}).content, tmp_path)

    assert re.search(r"actor: ?עדי", text), text
    assert "All 1 matching events" in text


def test_the_footer_says_page_n_of_m(viewer, scripts_events, tmp_path):
    for minute in range(90):  # 40 rows per table: the events take three pages after the first
        record_event(
            AuditKind.TIMER_STARTED, actor=None, summary=f"timer {minute}",
            at=T0 + timedelta(hours=1, minutes=minute),
        )  # fmt: skip

    text = pdf_text(viewer.get("/api/v1/audit/export.pdf").content, tmp_path)

    pages = re.findall(r"Page (\d+) of (\d+)", text)
    total = int(pages[0][1])
    assert total >= 3
    assert pages == [(str(n), str(total)) for n in range(1, total + 1)]
