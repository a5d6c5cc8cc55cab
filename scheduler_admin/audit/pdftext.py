"""Text for the PDF report in every script an actor name or a summary may use.

reportlab draws each character with its font's glyph, left to right: no font fallback, no
bidirectional reordering, no Arabic shaping (those need the optional ``rlbidi`` and ``uharfbuzz``
packages, which the product does without). A Hebrew or Chinese name therefore came out as empty
boxes, and would come out backwards once it had glyphs. This module turns a logical string (as
stored, as the CSV has it) into what reportlab must draw:

1. **Arabic shaping** (``shape_arabic``): each Arabic letter becomes its contextual presentation
   form (isolated, initial, medial, final; lam-alef ligatures). The table is Unicode's own: the
   compatibility decompositions of the Arabic Presentation Forms blocks (``unicodedata``), and a
   letter's joining type follows from the forms it has (an initial form means it joins on both
   sides). A form no font has is left as the plain letter.
2. **Line breaking in logical order** (``logical_lines``), for text with right-to-left
   characters: reordering first would put the end of a long Hebrew summary on the first line.
3. **Visual order** (``visual_order``), per line: the Unicode Bidirectional Algorithm (UAX #9)
   for one paragraph without explicit embeddings, isolates or bracket pairs: rules P2-P3 (base
   direction from the first strong character), W1-W7, N1-N2, I1-I2, L1-L2 (reverse runs from
   the highest level down), L3 (a combining mark stays after its base, where a zero-width mark
   must be drawn) and L4 (mirrored brackets at right-to-left levels). Text extractors such as
   ``pdftotext`` reorder right-to-left runs back, so the PDF's text reads as the CSV's (Arabic
   as presentation forms, which NFKC normalisation maps back to the letters).
4. **Font runs** (``font_runs``): each character goes to the first font of a chain that has a
   glyph for it; the caller turns runs of one font into ``<font>`` spans, so Latin text stays in
   the normal font.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Sequence
from functools import cache

_FORM_TAGS = {"<isolated>", "<final>", "<initial>", "<medial>"}
_PRESENTATION_BLOCKS = (range(0xFB50, 0xFE00), range(0xFE70, 0xFF00))
_TATWEEL = "\u0640"
#: Bracket pairs swapped at right-to-left levels (rule L4); the common ones of BidiMirroring.txt.
_MIRRORED = dict(zip("()[]{}<>«»\u2039\u203a", ")(][}{><»«\u203a\u2039", strict=True))
_RIGHT_TO_LEFT = {"R", "AL"}
_NUMBERS = {"EN", "AN"}
_STRONG = {"L", "R", "AL"}


# --- 1. Arabic shaping ----------------------------------------------------------------------------


@cache
def _arabic_forms() -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """``{letter: {form: presentation character}}`` and the same for lam-alef pairs."""
    letters: dict[str, dict[str, str]] = {}
    ligatures: dict[tuple[str, str], dict[str, str]] = {}
    for block in _PRESENTATION_BLOCKS:
        for code in block:
            tag, *parts = unicodedata.decomposition(chr(code)).split() or [""]
            if tag not in _FORM_TAGS:
                continue
            form = tag.strip("<>")
            bases = tuple(chr(int(part, 16)) for part in parts)
            if len(bases) == 1:
                letters.setdefault(bases[0], {}).setdefault(form, chr(code))
            elif len(bases) == 2 and bases[0] == "\u0644":  # lam + a form of alef
                ligatures.setdefault((bases[0], bases[1]), {}).setdefault(form, chr(code))
    return letters, ligatures


def _joins_both_sides(char: str) -> bool:
    forms = _arabic_forms()[0].get(char, {})
    return char == _TATWEEL or "initial" in forms or "medial" in forms


def _joins_right(char: str) -> bool:
    """Joins the character before it (every joining letter does, on its right side)."""
    return char == _TATWEEL or "final" in _arabic_forms()[0].get(char, {})


def _transparent(char: str) -> bool:
    return unicodedata.category(char) in {"Mn", "Me"}


def shape_arabic(text: str, has_glyph: Callable[[str], bool] = lambda _: True) -> str:
    """``text`` with each Arabic letter in its contextual form (see the module docstring)."""
    letters, ligatures = _arabic_forms()
    if not any(char in letters for char in text):
        return text
    # Neighbours skip combining marks (harakat), which do not break a join.
    solid = [i for i, char in enumerate(text) if not _transparent(char)]
    before = {i: solid[n - 1] if n else None for n, i in enumerate(solid)}
    after = {i: solid[n + 1] if n + 1 < len(solid) else None for n, i in enumerate(solid)}

    def joined_before(i: int) -> bool:
        j = before.get(i)
        return j is not None and _joins_both_sides(text[j]) and _joins_right(text[i])

    def joined_after(i: int) -> bool:
        j = after.get(i)
        return j is not None and _joins_both_sides(text[i]) and _joins_right(text[j])

    out: list[str] = []
    skip: set[int] = set()
    for i, char in enumerate(text):
        if i in skip:
            continue
        following = after.get(i)
        if following == i + 1 and (char, text[i + 1]) in ligatures:
            form = "final" if joined_before(i) else "isolated"
            ligature = ligatures[(char, text[i + 1])].get(form)
            if ligature and has_glyph(ligature):
                out.append(ligature)
                skip.add(i + 1)
                continue
        if char in letters:
            form = {
                (True, True): "medial",
                (True, False): "final",
                (False, True): "initial",
                (False, False): "isolated",
            }[(joined_before(i), joined_after(i))]
            shaped = letters[char].get(form) or letters[char].get("isolated")
            out.append(shaped if shaped and has_glyph(shaped) else char)
        else:
            out.append(char)
    return "".join(out)


# --- 2. Lines in logical order --------------------------------------------------------------------


def has_right_to_left(text: str) -> bool:
    return any(unicodedata.bidirectional(char) in _RIGHT_TO_LEFT for char in text)


def logical_lines(text: str, width: float, measure: Callable[[str], float]) -> list[str]:
    """Greedy breaking at spaces; a word wider than ``width`` gets a line of its own."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if line and measure(candidate) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    return [*lines, line] if line else lines


# --- 3. Visual order ------------------------------------------------------------------------------


def base_level(text: str) -> int:
    """0 (left to right) or 1 (right to left): the first strong character decides (P2-P3)."""
    for char in text:
        kind = unicodedata.bidirectional(char)
        if kind in _STRONG:
            return 1 if kind in _RIGHT_TO_LEFT else 0
    return 0


def _resolved_types(text: str, level: int) -> list[str]:
    """Rules W1-W7 and N1-N2: every character's type is then L, R, EN or AN."""
    edge = "R" if level else "L"
    types = [unicodedata.bidirectional(char) or "ON" for char in text]
    previous = edge
    for i, kind in enumerate(types):  # W1: a mark takes the type of what it marks
        types[i] = previous if kind == "NSM" else kind
        previous = types[i]
    strong = edge
    for i, kind in enumerate(types):  # W2, W3
        if kind in _STRONG:
            strong = kind
        if kind == "EN" and strong == "AL":
            types[i] = "AN"
    types = ["R" if kind == "AL" else kind for kind in types]
    for i in range(1, len(types) - 1):  # W4: one separator between two numbers of a kind
        left, middle, right = types[i - 1 : i + 2]
        if left == right and (
            (middle == "ES" and left == "EN") or (middle == "CS" and left in _NUMBERS)
        ):
            types[i] = left
    for start, end in _runs_of(types, lambda kind: kind == "ET"):  # W5: next to a number
        if (start > 0 and types[start - 1] == "EN") or (end < len(types) and types[end] == "EN"):
            types[start:end] = ["EN"] * (end - start)
    types = ["ON" if kind in {"ES", "ET", "CS"} else kind for kind in types]  # W6
    strong = edge
    for i, kind in enumerate(types):  # W7
        if kind in {"L", "R"}:
            strong = kind
        elif kind == "EN" and strong == "L":
            types[i] = "L"
    resolved = ["R" if kind in _NUMBERS else kind for kind in types]  # numbers count as R (N1)
    for start, end in _runs_of(types, lambda kind: kind not in _STRONG | _NUMBERS):  # N1-N2
        left = resolved[start - 1] if start > 0 else edge
        right = resolved[end] if end < len(types) else edge
        for j in range(start, end):
            types[j] = left if left == right else edge
    return types


def _runs_of(types: Sequence[str], inside: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """(start, end) of each maximal run of types for which ``inside`` is true."""
    start = None
    for i, kind in enumerate(types):
        if inside(kind) and start is None:
            start = i
        elif not inside(kind) and start is not None:
            yield start, i
            start = None
    if start is not None:
        yield start, len(types)


def visual_order(text: str, level: int | None = None) -> str:
    """One line of ``text`` in the order it is drawn, left to right (see the module docstring);
    ``level`` is the paragraph's base level (by default, its first strong character's)."""
    if not has_right_to_left(text) and not level:
        return text
    level = base_level(text) if level is None else level
    types = _resolved_types(text, level)
    levels = []
    for kind in types:  # I1-I2
        if level % 2 == 0:
            levels.append(level + {"L": 0, "R": 1}.get(kind, 2))
        else:
            levels.append(level + (0 if kind == "R" else 1))
    trailing = len(text) - len(text.rstrip())
    for i in range(len(text) - trailing, len(text)):  # L1: trailing whitespace
        levels[i] = level
    # L3: a mark travels with its base, so clusters are the units that get reversed.
    clusters: list[list[int]] = []
    for i, char in enumerate(text):
        if clusters and _transparent(char):
            clusters[-1].append(i)
        else:
            clusters.append([i])
    order = list(range(len(clusters)))
    cluster_level = [levels[cluster[0]] for cluster in clusters]
    lowest_odd = min((lv for lv in cluster_level if lv % 2), default=None)
    if lowest_odd is not None:
        for current in range(max(cluster_level), lowest_odd - 1, -1):  # L2
            i = 0
            while i < len(order):
                if cluster_level[order[i]] >= current:
                    j = i
                    while j < len(order) and cluster_level[order[j]] >= current:
                        j += 1
                    order[i:j] = reversed(order[i:j])
                    i = j
                else:
                    i += 1
    drawn = []
    for n in order:
        for i in clusters[n]:
            char = text[i]
            drawn.append(_MIRRORED.get(char, char) if levels[i] % 2 else char)  # L4
    return "".join(drawn)


# --- 4. Font runs ---------------------------------------------------------------------------------


def font_runs(
    text: str, fonts: Sequence[tuple[str, Callable[[str], bool]]]
) -> list[tuple[str, str]]:
    """``[(font name, text), ...]``: each character in the first of ``fonts`` (name, has-glyph)
    that has it, else in the first font; a combining mark stays in its base's font."""
    runs: list[tuple[str, str]] = []
    for char in text:
        if runs and _transparent(char):
            name = runs[-1][0]
        else:
            name = next((font for font, has in fonts if has(char)), fonts[0][0])
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1] + char)
        else:
            runs.append((name, char))
    return runs
