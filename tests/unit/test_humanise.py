"""How pages show times and stored reasons (``{% load humanise %}``): a time as a ``<time>`` in
UTC that the browser puts in the viewer's zone, UTC on hover; a stored reason with its quantities
humanised and its ISO times as times, each exact value on hover and the whole stored text as the
tooltip, and nothing that is not a resource quantity touched."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta, timezone

import pytest
from django.template import TemplateSyntaxError

from scheduler_admin.web.templatetags.humanise import humane, when

REASON = (
    "victim #1, 1st on n1 in the order: priority 1000, created 2026-03-01T10:02:00Z; "
    "root.team.a had memory 16192Mi, vcore 1500m, nvidia.com/gpu 4 left to free before it, "
    "memory 200Gi after (HTTP 429)"
)


def test_a_time_is_utc_in_the_page_with_its_iso_reading_for_the_browser() -> None:
    berlin = timezone(timedelta(hours=1))
    moment = datetime(2026, 3, 1, 13, 0, 5, tzinfo=berlin)
    assert str(when(moment)) == (
        '<time class="local-time" datetime="2026-03-01T12:00:05Z" data-precision="second" '
        'title="2026-03-01 12:00:05 UTC">2026-03-01 12:00:05 UTC</time>'
    )
    assert ">2026-03-01 12:00 UTC</time>" in str(when(moment, "minute"))
    assert "—" in str(when(None))
    with pytest.raises(TemplateSyntaxError):
        when(moment, "hour")


def test_a_reason_reads_humanised_with_every_exact_value_on_hover() -> None:
    shown = str(humane(REASON))
    assert shown.startswith(f'<span class="humane" title="{html.escape(REASON)}">')
    assert 'memory <span class="qty" title="16192Mi">15.8Gi</span>' in shown
    assert 'vcore <span class="qty" title="1500m">1.5</span>' in shown
    assert (
        '<time class="local-time" datetime="2026-03-01T10:02:00Z" data-precision="second" '
        'title="2026-03-01 10:02:00 UTC">2026-03-01 10:02:00 UTC</time>'
    ) in shown
    # Already as short as it reads, or not a resource: as stored.
    assert "nvidia.com/gpu 4 left" in shown and "memory 200Gi after" in shown
    assert "priority 1000," in shown and "(HTTP 429)" in shown and "victim #1" in shown
    words = re.sub(r"<[^>]+>", "", shown)
    assert "16192Mi" not in words and "2026-03-01T" not in words


@pytest.mark.parametrize(
    "text",
    ["not needed: the ask fits n1", "priority 2000 over 1000", "memory 100Gi", "", "pods 2"],
)
def test_a_reason_with_nothing_to_humanise_is_its_escaped_text(text: str) -> None:
    assert str(humane(text)) == text


def test_reasons_are_escaped() -> None:
    shown = str(humane('<script>"x"</script> memory 16192Mi'))
    assert "<script>" not in shown and "&lt;script&gt;" in shown
    assert str(humane(None)) == ""
    assert str(humane("<b>")) == "&lt;b&gt;"


def test_times_keep_their_instant_whatever_zone_they_were_stored_in() -> None:
    shown = str(humane("due 2026-03-01T13:30:00+01:30"))
    assert 'datetime="2026-03-01T12:00:00Z"' in shown
