"""Text and queries for PostgreSQL's full-text search, pure: cut like FTS5's unicode61, and
every match string the lexical planner makes translated to a tsquery with no user syntax."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.search.lexical import all_of, any_of, query_terms
from mirror.search.tsquery import headline_query, headline_text, normalized, to_tsquery
from mirror.store.textindex.postgres.index import fitted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("chrome.runtime.onMessage", "chrome runtime onmessage"),
        ("service_worker_start()", "service worker start"),
        ("Émigré CAFÉ", "emigre cafe"),
        ("e\u0301migre\u0301", "emigre"),
        ("服务。工作", "服务 工作"),
        ("Ключ API", "ключ api"),
        ("ｶﾀｶﾅ", "カタカナ"),  # half-width katakana, as NFKD folds it
        ("が", "が"),  # a voiced kana keeps its mark
        ("it's 'quoted' \\ back", "it s quoted back"),
    ],
)
def test_text_is_cut_like_unicode61(text: str, expected: str) -> None:
    assert normalized(text).split() == expected.split()


def _translate(query: str) -> tuple[str, str]:
    terms = query_terms(query)
    return to_tsquery(all_of(terms)), to_tsquery(any_of(terms))


def test_match_strings_become_tsqueries() -> None:
    # The whole identifier, and its parts where FTS5 looks in title, headings and code
    # (tsvector weights A, B and D on PostgreSQL).
    parts = "'chrome':ABD | 'runtime':ABD | 'onmessage':ABD | 'on':ABD | 'message':ABD"
    assert _translate("chrome.runtime.onMessage") == (
        f"(('chrome runtime onmessage' & (((({parts})) | 'chrome runtime onmessage'))))",
        "('chrome runtime onmessage' | 'chrome' | 'runtime' | 'onmessage' | 'on' | 'message')",
    )
    assert _translate("walrus keras") == ("('walrus' & 'keras')", "('walrus' | 'keras')")
    assert _translate("服务工作线程")[0] == "'服务 务工 工作 作线 线程'"
    assert _translate("服") == ("'服':*", "'服':*")
    # A word of marks alone has nothing searchable left: it drops out with its operator.
    assert _translate("walrus \u0301")[0] == "'walrus'"
    assert to_tsquery('"\u0301"') == ""
    assert to_tsquery('{title} : ("a" AND "b"*)') == "(('a':A & 'b':*A))"


def test_an_at_rule_is_its_marker_then_its_name() -> None:
    # The index writes the marker just before the name (lexical.with_at_markers): pages that
    # write `@font-face` first, then pages with the words alone (its own, not an identifier's
    # parts in title, headings and code).
    assert _translate("@font-face") == (
        "'zzatfontface font face'",
        "('zzatfontface font face' | 'font' | 'face')",
    )
    assert _translate("css `@scope`") == (
        "('css' & 'zzatscope scope')",
        "('css' | 'zzatscope scope' | 'scope')",
    )
    assert _translate("scope") == ("'scope'", "'scope'")
    # Inside a word or an address it is no at-rule.
    assert _translate("user@example.com")[0] == _translate("user.example.com")[0]


@pytest.mark.parametrize(
    "match", ['"a" AND', '("a"', "NEAR(a b)", '"a" OR OR "b"', "a", '{url} : "a"']
)
def test_strings_the_planner_never_makes_are_refused(match: str) -> None:
    with pytest.raises(ValueError):
        to_tsquery(match)


@given(st.text(max_size=200))
def test_any_query_translates_to_quoted_operands_only(query: str) -> None:
    for translated in _translate(query) if query_terms(query) else ():
        # Outside quotes only operators, parentheses, prefix marks, weights and spaces remain.
        outside = translated.split("'")[0::2]
        assert all(set(part) <= set(" &|():*ABCD") for part in outside), translated
        inside = translated.split("'")[1::2]
        assert all(word.strip() and "\\" not in word for word in inside), translated


def test_a_huge_page_is_cut_to_fit_the_tsvector_limit() -> None:
    short = "walrus " * 1000
    assert fitted(short, 600_000) == short
    distinct = " ".join(f"w{i:07d}" for i in range(200_000))
    cut = fitted(distinct, 600_000)
    assert distinct.startswith(cut) and 40_000 < len(cut.split()) < 60_000
    assert not cut.endswith(" ")


def test_headline_text_maps_every_cut_character_back_to_the_text_shown():
    shown = "Use chrome.runtime.onMessage — Émigré ﬁle 缓存。"
    cut, origins = headline_text(shown)
    assert cut.split() == ["use", "chrome", "runtime", "onmessage", "emigre", "file", "缓", "存"]
    assert len(origins) == len(cut)
    start = cut.index("onmessage")
    assert shown[origins[start] : origins[start + len("onmessage") - 1] + 1] == "onMessage"
    start = cut.index("emigre")
    assert shown[origins[start] : origins[start + 5] + 1] == "Émigré"
    start = cut.index("file")
    assert shown[origins[start] : origins[start + 3] + 1] == "ﬁle"


def test_headline_query_marks_the_users_words_not_an_identifiers_parts():
    assert headline_query("chrome.runtime.onMessage") == "'chrome' | 'runtime' | 'onmessage'"
    assert headline_query("getUserMedia") == "'getusermedia'"
    assert headline_query("缓存网络") == "'缓 存 网 络' | '缓 存' | '存 网' | '网 络'"
    assert headline_query("...") == ""
