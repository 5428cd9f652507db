"""The browser's history, changes and freshness views: routes on the web tests' store (the
sample plus a hostile page, fetched at various times), then a refresh's worth of changes."""

from __future__ import annotations

import re
from dataclasses import replace
from html import unescape

import pytest
from starlette.testclient import TestClient

from mirror.changes.events import ChangeEvent
from mirror.config import Settings
from mirror.models import Document
from mirror.records import read_sample
from mirror.serve.web import diff_view, freshness, timeline
from mirror.service import Mirror
from tests.conftest import seed
from tests.test_web import CHROME, DAY, HOSTILE, NOW, client, make_client, web_mirror

__all__ = ["client", "web_mirror"]  # fixtures, imported to be found

A11Y = f"{CHROME}/mv3/a11y"
A11Y_URL = f"/history/{A11Y[10:]}"
NOTICE = "\n## Deprecated APIs\n\nThe `chrome.tts` voices API is deprecated.\n"


def _change(mirror: Mirror, name: str, extra: str, at: float) -> None:
    """`name` with `extra` appended, written at `at`, as a refresh that found it changed."""
    doc = next(d for d in read_sample() if d.name == name) if name != HOSTILE else None
    if doc is None:
        doc = mirror.get_documents([name]).documents[0]
    seed(mirror, [replace(doc, content=(doc.content or "") + extra).with_derived_fields()],
         fetched_at=at)  # fmt: skip


@pytest.fixture
def changed(web_mirror: Mirror) -> TestClient:
    _change(web_mirror, A11Y, NOTICE, NOW - DAY)
    _change(web_mirror, HOSTILE, '\n<script>alert("diff")</script>\n', NOW - 2 * 3600)
    return make_client(web_mirror)


def test_history_lists_kept_versions_and_draws_the_diff(changed: TestClient) -> None:
    page = changed.get(A11Y_URL)
    assert page.status_code == 200
    versions = re.findall(r'<td class="n">(\d+)', page.text)
    assert versions == ["2", "1"] and "current" in page.text
    added = [unescape(t) for t in re.findall(r'<tr class="add">.*?<code>(.*?)</code>', page.text)]
    assert added == ["+", "+## Deprecated APIs", "+", "+The `chrome.tts` voices API is deprecated."]
    assert "+4 / \u22120 lines" in page.text and "--from 1 --to 2" in page.text
    # The same versions by hash prefix, and a version with itself: no lines differ.
    same = changed.get(A11Y_URL, params={"from": "1", "to": "1"})
    assert same.status_code == 200 and "The two versions have the same content." in same.text


def test_history_escapes_what_the_diff_shows(changed: TestClient) -> None:
    page = changed.get(f"/history/{HOSTILE[10:]}").text
    assert "<script>" not in page and "+&lt;script&gt;alert(&#34;diff&#34;)&lt;/script&gt;" in page


def test_history_of_one_version_bad_versions_and_unknown_pages(
    changed: TestClient, web_mirror: Mirror
) -> None:
    single = changed.get(f"/history/{CHROME[10:]}/mv3/intro")
    assert single.status_code == 200 and "Only one version is kept so far" in single.text
    bad = changed.get(A11Y_URL, params={"from": "9"})
    assert bad.status_code == 400 and "no version &#39;9&#39;" in bad.text
    assert "kept versions: 2, 1" in bad.text
    unknown = changed.get("/history/developer.chrome.com/docs/extensions/mv3/nothing")
    assert unknown.status_code == 404 and "dk-mirror fetch" in unknown.text
    # A name known from search results only has content in no version: no history either.
    from tests.conftest import open_store

    store = open_store(web_mirror)
    try:
        seen = Document(name="documents/web.dev/articles/seen-in-search", title="Seen")
        store.recordings.note_metadata([seen], at=NOW, upstream="test")
    finally:
        store.close()
    metadata_only = changed.get("/history/web.dev/articles/seen-in-search")
    assert metadata_only.status_code == 404
    assert "dk-mirror fetch documents/web.dev/articles/seen-in-search" in metadata_only.text
    # The document page links to its history.
    doc = changed.get(f"/doc/{A11Y[10:]}").text
    assert f'href="{A11Y_URL}"' in doc


def test_changes_lists_newest_first_each_opening_its_diff(changed: TestClient) -> None:
    page = changed.get("/changes")
    assert page.status_code == 200
    items = re.findall(r'<li class="change kind-(\w+)( signal)?">\s*<span class="badge">\w+</span>'
                       r'\s*<a class="what" href="([^"]+)">([^<]+)</a>', page.text)  # fmt: skip
    assert [(i[0], i[3]) for i in items[:2]] == [("changed", HOSTILE[10:]), ("changed", A11Y[10:])]
    assert items[1][1] == " signal" and "deprecation notice added" in page.text
    diff = changed.get(unescape(items[1][2]))
    assert diff.status_code == 200 and "+## Deprecated APIs" in diff.text
    # The timeline: one row per section, the signal drawn in its own colour.
    svg = page.text[page.text.index("<svg") : page.text.index("</svg>")]
    assert ">developer.chrome.com/docs/extensions<" in svg and svg.count("tone-signal") == 1
    assert "/changes?prefix=developer.chrome.com%2Fdocs%2Fextensions%2F&amp;days=30" in svg


def test_changes_filters_by_prefix_kind_and_days(changed: TestClient) -> None:
    # The tensorflow pages were added 40 days ago: outside the default 30 days.
    assert "www.tensorflow.org/hub" not in changed.get("/changes").text
    tf = changed.get("/changes", params={"prefix": "www.tensorflow.org/", "days": "60"}).text
    assert ">www.tensorflow.org/hub<" in tf and ">developer.chrome.com/docs" not in tf
    signal = changed.get("/changes", params={"kind": "signal"}).text
    assert signal.count('<li class="change') == 1 and A11Y[10:] in signal
    week = changed.get("/changes", params={"days": "7", "kind": "added"}).text
    # Added within the week: the 35 chrome pages of the sample and the hostile page.
    assert "kind-changed" not in week and "36 changes in the last 7 days" in week
    none = changed.get("/changes", params={"kind": "removed"})
    assert none.status_code == 200 and "No changes recorded in this window." in none.text
    for bad in ({"days": "0"}, {"days": "x"}, {"kind": "bogus"}):
        response = changed.get("/changes", params=bad)
        assert response.status_code == 400, bad
        assert "<svg" not in response.text


def test_status_says_when_a_refresh_is_due(web_mirror: Mirror, client: TestClient) -> None:
    page = client.get("/status").text
    # The 15 tensorflow pages were fetched 40 days ago: past the default 7 days.
    assert "Refresh due: 15 copies are older than 7d." in page
    assert "dk-mirror refresh --older-than 7d" in page
    svg = page[
        page.index('class="freshness-chart"') : page.index("</svg>", page.index("freshness"))
    ]
    assert '<g class="row fresh">' in svg and '<g class="row due">' in svg
    assert ">15 of 15 due<" in svg and "refresh due after 7d" in svg
    # With a max age of 60 days configured, the same store is fresh.
    settings = Settings(db_url=web_mirror.settings.db_url, max_age=60 * DAY)
    with Mirror(settings, clock=lambda: NOW) as patient:
        calm = make_client(patient).get("/status").text
    assert "Fresh: every copy was fetched or checked within 60d." in calm
    assert "the configured max age" in calm and '<g class="row due">' not in calm


# --- the pure parts ----------------------------------------------------------------------------


def test_diff_rows_number_both_sides_and_cap_the_rows() -> None:
    text = "--- a\n+++ b\n@@ -3,3 +3,3 @@\n same\n-old\n+new\n tail\n"
    table = diff_view.diff_rows(text)
    assert [(r.kind, r.text, r.old, r.new) for r in table.rows] == [
        ("hunk", "@@ -3,3 +3,3 @@", None, None), ("ctx", "same", 3, 3), ("del", "old", 4, None),
        ("add", "new", None, 4), ("ctx", "tail", 5, 5),
    ]  # fmt: skip
    assert (table.added, table.removed, table.truncated) == (1, 1, False)
    capped = diff_view.diff_rows(text, limit=2)
    assert len(capped.rows) == 2 and capped.truncated and capped.added == 1


def test_freshness_spread_due_counts_and_the_axis() -> None:
    from mirror.models import Summary

    def copy(host: str, days: float) -> Summary:
        return Summary(f"documents/{host}/p{days}", None, host, None, 1, True, NOW - days * DAY)

    items = freshness.freshness(
        [copy("a.dev", d) for d in (0.5, 1, 2, 10, 20)] + [copy("b.dev", 1)], NOW, 7 * DAY
    )
    a, b = items
    assert (a.source, a.count, a.due, a.median / DAY, a.oldest / DAY) == ("a.dev", 5, 2, 2, 20)
    assert (b.count, b.due) == (1, 0)
    chart = freshness.freshness_chart(items, 7 * DAY)
    row = chart.rows[0]
    assert chart.left < row.x_newest < row.x_median < chart.rule_x < row.x_oldest
    assert [label for _, label in chart.ticks][:3] == ["1 hour", "1 day", "7 days"]
    assert freshness.duration_label(7 * DAY) == "7d" and freshness.duration_label(5400) == "90m"


def test_timeline_sections_and_day_bins() -> None:
    assert timeline.section_of(f"{CHROME}/mv3/a11y") == "developer.chrome.com/docs/extensions"
    assert timeline.section_of("documents/go.dev/doc") == "go.dev"

    def event(i: int, name: str, days: float, kind: str = "changed", classes=("text",)):  # type: ignore[no-untyped-def]
        return ChangeEvent(i, name, NOW - days * DAY, kind, "a" * 64, "b" * 64, None, None,
                           classes)  # fmt: skip

    events = [event(1, A11Y, 0.2), event(2, A11Y, 0.5, classes=("signal", "text")),
              event(3, "documents/go.dev/doc/x", 3, kind="added"), event(4, A11Y, 45)]  # fmt: skip
    chart = timeline.timeline(events, NOW, 30)
    first, second = chart.rows
    assert (first.section, first.total, second.section) == (
        "developer.chrome.com/docs/extensions",
        2,
        "go.dev/doc",
    )
    (dot,) = first.dots  # both of today's changes in one dot; the 45-day-old one is outside
    assert (dot.count, dot.tone) == (2, "signal") and dot.x > second.dots[0].x
    assert timeline.history_url(events[2].name) == "/history/go.dev/doc/x"
