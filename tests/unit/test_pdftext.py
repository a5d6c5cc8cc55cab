"""The PDF report's text layout (``scheduler_admin/audit/pdftext.py``): Arabic shaping, the
bidirectional order in which a line is drawn, and font fallback. Expected orders follow UAX #9
(as a browser shows the text); each string below is written in logical order."""

from __future__ import annotations

import unicodedata

import pytest

from scheduler_admin.audit.pdftext import (
    base_level,
    font_runs,
    logical_lines,
    shape_arabic,
    visual_order,
)


@pytest.mark.parametrize(
    ("text", "drawn"),
    [
        ("admin", "admin"),
        ("עדי", "ידע"),
        ("admin עדי", "admin ידע"),
        ("עדי admin", "admin ידע"),  # a right-to-left paragraph: Latin goes to the left
        ("עדי 42", "42 ידע"),  # numbers keep their digit order
        ("abc 12 עדי 34", "abc 12 34 ידע"),
        ("Token for עדי (admin) created", "Token for ידע (admin) created"),
        ("שלום (עולם) 12.5%", "12.5% (םלוע) םולש"),  # brackets mirrored at RTL levels
        ("ל-300Gi", "300Gi-ל"),
    ],
)
def test_a_line_is_drawn_in_the_visual_order_of_the_bidi_algorithm(text, drawn):
    assert visual_order(text) == drawn


def test_a_combining_mark_is_drawn_after_its_letter():
    shaped = shape_arabic("مُدِير")
    drawn = visual_order(shaped)
    assert [unicodedata.category(drawn[i + 1]) for i in (2, 4)] == ["Mn", "Mn"]
    assert unicodedata.normalize("NFKC", drawn) == "ريدِمُ"


@pytest.mark.parametrize(
    ("word", "forms"),
    [
        # meem initial, dal final (dal never joins the next letter), yeh initial, reh final
        ("مدير", ["\ufee3", "\ufeaa", "\ufef3", "\ufeae"]),
        ("لا", ["\ufefb"]),  # lam-alef ligature
        ("بيت", ["\ufe91", "\ufef4", "\ufe96"]),  # initial, medial, final
        ("ء", ["\ufe80"]),  # hamza never joins
    ],
)
def test_arabic_letters_take_their_contextual_forms(word, forms):
    shaped = shape_arabic(word)
    assert list(shaped) == forms
    assert unicodedata.normalize("NFKC", shaped) == word


def test_a_form_without_a_glyph_stays_the_plain_letter():
    assert shape_arabic("مدير", has_glyph=lambda char: char != "\ufeaa") == "\ufee3د\ufef3\ufeae"


def test_the_first_strong_character_sets_the_direction():
    assert base_level("123 עדי abc") == 1
    assert base_level("123 abc עדי") == 0
    assert base_level("123") == 0


def test_lines_are_broken_in_logical_order_before_they_are_reordered():
    lines = logical_lines("אחת שתיים שלוש ארבע", 9, measure=len)
    assert lines == ["אחת שתיים", "שלוש ארבע"]
    assert [visual_order(line) for line in lines] == ["םייתש תחא", "עברא שולש"]


def test_each_character_goes_to_the_first_font_with_a_glyph():
    latin = ("sans", lambda char: ord(char) < 0x3000)
    cjk = ("cjk", lambda char: ord(char) >= 0x3000)
    assert font_runs("by 管理者 ok", [latin, cjk]) == [
        ("sans", "by "),
        ("cjk", "管理者"),
        ("sans", " ok"),
    ]
    assert font_runs("\U0001f600", [latin, cjk]) == [("cjk", "\U0001f600")]
