"""Local full-text search: the index follows the documents, user text is never FTS syntax."""

# Cyrillic and Arabic test text is deliberate.
# ruff: noqa: RUF001

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, text

from mirror.models import Document
from mirror.search import filters
from mirror.search.lexical import all_of, any_of, names_code, query_terms
from mirror.store.schema.tables import documents
from mirror.store.store import Store
from mirror.store.textindex.postgres import index as pg_index
from mirror.store.textindex.ranking import LocalHit
from mirror.store.textindex.sqlite import entries as text_entries
from mirror.store.textindex.sqlite import search as text_search
from mirror.store.textindex.sqlite.adapter import CoreFilter
from tests.search_backends import BACKENDS, index_entries, module_store_url

pytestmark = pytest.mark.both_backends
# The modules that cut heading lines while indexing: SQLite's and PostgreSQL's.
INDEX_WRITERS = (text_entries, pg_index)

CHROME = "developer.chrome.com"
TF = "www.tensorflow.org"


def _doc(path: str, title: str, content: str | None, source: str = CHROME) -> Document:
    return Document(
        name=f"documents/{source}/{path}",
        uri=f"https://{source}/{path}",
        content=content,
        description=f"About {title.lower()}.",
        data_source=source,
        title=title,
    )


DOCS = [
    _doc("walrus", "Walrus care", "# Walrus care\n\nFeed the walrus fish every morning."),
    _doc("workers", "Service workers", "# Service workers\n\nA service worker caches requests."),
    _doc("i18n/ru", "Ключи", "# Ключи\n\nКлюч API хранится в настройках."),
    _doc("i18n/zh", "服务", "# 服务\n\n服务 工作线程 缓存 请求"),
    _doc("i18n/ar", "مرحبا", "# مرحبا\n\nمرحبا بالعالم"),
    _doc("accents", "Émigré café", "# Émigré café\n\nThe émigré opened a café."),
    _doc("code", "Snake case", "# Snake case\n\nCall `tf.function` or `service_worker_start()`."),
    _doc("keras", "Keras models", "# Keras models\n\nBuild a model with Keras layers.", TF),
    _doc("saved", "SavedModel", "# SavedModel\n\nExport a Keras model as a SavedModel.", TF),
]


def _open(url: str) -> Store:
    store = Store.open(url)
    store.put(DOCS, fetched_at=0.0, upstream="test")
    return store


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = _open(db_url)
    yield opened
    opened.close()


@pytest.fixture(scope="module", params=BACKENDS)
def shared(request: pytest.FixtureRequest) -> Iterator[Store]:
    with module_store_url(request, "search") as url:
        opened = _open(url)
        yield opened
        opened.close()


def _names(hits: list[LocalHit]) -> list[str]:
    return [h.name.rsplit("/", 1)[-1] for h in hits]


def _indexed(store: Store, name: str) -> bool:
    """Whether a document has an entry in the index (search_docs and the words it names)."""
    return bool(index_entries(store, name))


def _counts(store: Store) -> tuple[int, int]:
    """Documents, index entries."""
    with store.engine.connect() as conn:
        docs = conn.execute(text("SELECT count(*) FROM documents")).scalar_one()
    return docs, index_entries(store)


def test_put_documents_are_found(store: Store) -> None:
    assert store.has_search_index()
    hits = store.search_local("walrus fish")
    assert _names(hits) == ["walrus"]
    hit = hits[0]
    assert (hit.chunk_id, hit.heading) == ("c0", "Walrus care")
    assert hit.text == "# Walrus care\n\nFeed the walrus fish every morning."
    assert 0.0 < hit.score < 1.0
    assert _indexed(store, hit.name)
    assert not _indexed(store, f"documents/{CHROME}/nothing")


def test_changed_content_replaces_the_old_words(store: Store) -> None:
    store.put(
        [_doc("walrus", "Walrus care", "# Walrus care\n\nWalruses like clams.")],
        fetched_at=1.0,
        upstream="test",
    )
    assert store.search_local("fish") == []
    assert _names(store.search_local("clams")) == ["walrus"]
    docs, entries = _counts(store)
    assert docs == entries


def test_unchanged_copies_are_not_reindexed(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    assert store.search_local("walrus")  # SQLite: the index caught up with the first put
    chunked: list[str] = []
    real = text_entries.headings
    for writer in INDEX_WRITERS:
        monkeypatch.setattr(writer, "headings", lambda c: chunked.append(c) or real(c))
    store.put(DOCS, fetched_at=5.0, upstream="again")
    assert chunked == []
    store.put([replace(DOCS[0], title="Walrus feeding")], fetched_at=6.0, upstream="again")
    assert _names(store.search_local("feeding")) == ["walrus"]
    assert len(chunked) == 1


def test_metadata_only_copy_drops_the_chunks(store: Store) -> None:
    store.put([_doc("walrus", "Walrus care", None)], fetched_at=1.0, upstream="test")
    assert store.search_local("walrus fish") == []
    assert not _indexed(store, f"documents/{CHROME}/walrus")


def test_failed_write_leaves_documents_and_index_unchanged(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mirror.store.tables import vectors

    before = _counts(store)
    real = vectors.forget

    def failing(conn: object, names: list[str]) -> None:
        # Fails after the batch's documents and index entries were written in the transaction.
        if f"documents/{CHROME}/new" in names:
            raise RuntimeError("boom")
        real(conn, names)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "forget", failing)
    batch = [
        _doc("walrus", "Walrus care", "# Walrus care\n\nWalruses like clams."),
        _doc("new", "New page", "# New\n\nboom"),
    ]
    with pytest.raises(RuntimeError):
        store.put(batch, fetched_at=2.0, upstream="test")
    assert _counts(store) == before
    assert _names(store.search_local("walrus fish")) == ["walrus"]
    assert store.search_local("clams") == []
    assert store.get_many([f"documents/{CHROME}/new"]) == {}


def test_deleting_a_document_deletes_its_index_rows(store: Store) -> None:
    with store.engine.begin() as conn:
        conn.execute(delete(documents).where(documents.c.name == f"documents/{CHROME}/walrus"))
    assert store.search_local("walrus") == []
    assert _counts(store) == (len(DOCS) - 1,) * 2


def test_where_clause_restricts_results(store: Store) -> None:
    everywhere = {h.name for h in store.search_local("model", limit=20)}
    assert {n.split("/")[1] for n in everywhere} == {TF}
    assert _names(store.search_local("keras")) == ["keras", "saved"]
    only_chrome = store.search_local("keras", where=filters.parse(f'data_source = "{CHROME}"'))
    assert only_chrome == []
    tf = store.search_local("keras model", where=filters.parse(f'data_source = "{TF}"'))
    assert _names(tf) == ["keras", "saved"]


# 30 pages about otters in one source and, in another, one long page that mentions them once.
OTTERS = [
    *(_doc(f"p{i:02}", "Otters", "# Otters\n\notter " * 3) for i in range(30)),
    _doc("rare", "Rivers", "# Rivers\n\n" + "water " * 300 + "otter", TF),
]


@pytest.mark.sqlite_only  # the tantivy candidate loop; PostgreSQL joins the filter into one query
def test_a_selective_filter_looks_past_the_first_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_search, "_MAX_CANDIDATES", 8)
    calls = []
    real = CoreFilter.every

    def spy(self: CoreFilter) -> list[str]:
        calls.append(self)
        return real(self)

    monkeypatch.setattr(CoreFilter, "every", spy)
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    try:
        store.put(OTTERS, fetched_at=0.0, upstream="test")
        hits = store.search_local("otter", where=filters.parse(f'data_source = "{TF}"'))
        assert _names(hits) == ["rare"]
        assert calls, "the filter should have fallen back to searching among the pages it passes"
    finally:
        store.close()


def test_a_selective_filter_ranks_only_what_passes(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        store.put(OTTERS, fetched_at=0.0, upstream="test")
        hits = store.search_local("otter", where=filters.parse(f'data_source = "{TF}"'))
        assert _names(hits) == ["rare"]
        assert len(store.rank_documents("otter", limit=50)) == 31
    finally:
        store.close()


def test_ties_break_by_name_and_pages_follow_on(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        same = "# Same\n\nidentical text about badgers"
        store.put(
            [_doc(f"t{i:02}", "Same", same) for i in reversed(range(12))],
            fetched_at=0.0,
            upstream="test",
        )
        first = store.search_local("badgers", limit=3)
        assert _names(first) == ["t00", "t01", "t02"]
        everything = store.search_local("badgers", limit=12)
        assert _names(everything) == [f"t{i:02}" for i in range(12)]
        pages = [store.search_local("badgers", limit=5, offset=o) for o in (0, 5, 10)]
        assert [h for page in pages for h in page] == everything
    finally:
        store.close()


def test_scores_are_in_range_and_follow_the_order(shared: Store) -> None:
    hits = shared.search_local("service worker caches requests keras", limit=20)
    assert hits
    scores = [h.score for h in hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_all_words_first_then_any_word(shared: Store) -> None:
    assert _names(shared.search_local("service worker")) == ["workers", "code"]
    # No page has both words: the OR retry still finds each.
    assert sorted(_names(shared.search_local("walrus keras"))) == ["keras", "saved", "walrus"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ключ", "i18n/ru"),
        ("服务", "i18n/zh"),
        ("مرحبا", "i18n/ar"),
        ("emigre cafe", "accents"),
        ("ÉMIGRÉ", "accents"),
        ("e\u0301migre\u0301", "accents"),  # decomposed accents
        ("tf.function", "code"),
        ("service_worker_start", "code"),
        ("How do I feed a walrus?", "walrus"),
    ],
)
def test_words_in_any_script_are_found(shared: Store, query: str, expected: str) -> None:
    assert f"documents/{CHROME}/{expected}" in [h.name for h in shared.search_local(query)]


HOSTILE = [
    '"unbalanced quote',
    'say "walrus" twice',
    '""',
    "'",
    "walr*",
    "*",
    "NEAR(walrus fish, 2)",
    "NEAR",
    "-walrus",
    "walrus -fish",
    "a:b",
    "title:walrus",
    "{title body}: walrus",
    "walrus AND",
    "OR fish",
    "NOT",
    "AND OR NOT",
    "(((walrus",
    "walrus)",
    "^walrus",
    "walrus + fish",
    "🎉🚀",
    "walrus 🎉 fish",
    "服务工作线程",
    "ключ АПИ",
    "مرحبا بالعالم",
    "!!!???...",
    "",
    "   ",
    "x" * 100_000,
    " ".join(f"w{i}" for i in range(5000)),
    "'; DROP TABLE documents; --",
    "walrus\x00fish",
    "\u200b",
    "NEAR/3 walrus",
    'title:"walrus"',
    "walrus" + "\u0301" * 50,
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(shared: Store, query: str) -> None:
    hits = shared.search_local(query, limit=5)
    assert isinstance(hits, list)
    assert len(hits) <= 5
    if "walrus" in query and query.strip() != "-walrus":
        assert f"documents/{CHROME}/walrus" in [h.name for h in hits]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(shared: Store, query: str) -> None:
    assert isinstance(shared.search_local(query, limit=3), list)


def _texts(query: str) -> list[str]:
    return [t.text for t in query_terms(query)]


def test_match_expressions_contain_only_quoted_words() -> None:
    assert _texts('title:"foo" NEAR(bar*, 2) -baz') == ["title foo", "NEAR bar", "2", "baz"]
    assert _texts("How do I migrate my extension?") == ["migrate", "extension"]
    assert _texts("how do I") == ["how", "do", "I"]
    assert query_terms("🎉 !!!") == []
    terms = query_terms('a"b c')
    # Words joined by punctuation must appear whole; their parts only rank (see below).
    assert all_of(terms) == ('("a b" AND ({title headings side} : ("a" OR "b") OR "a b")) AND "c"')
    assert any_of(query_terms("chrome.runtime.onMessage")) == (
        '"chrome runtime onMessage" OR "chrome" OR "runtime" OR "onMessage" OR "on" OR "message"'
    )
    assert all_of(query_terms("服务工作线程")) == '"服务 务工 工作 作线 线程"'
    assert all_of(query_terms("服")) == '"服"*'


def test_a_page_of_many_distinct_words_is_stored_and_found(store: Store) -> None:
    # ~150,000 distinct words: past PostgreSQL's 1 MB tsvector limit if indexed whole, so
    # there the index keeps its first words; the write must succeed either way.
    words = [f"zq{i:06d}x" for i in range(150_000)]
    big = _doc("big", "Big reference", "# Big reference\n\n" + " ".join(words))
    store.put([big], fetched_at=1.0, upstream="test")
    assert store.get_many([big.name])
    assert set(_names(store.search_local(words[0]))) == {"big"}
    assert set(_names(store.search_local("reference"))) == {"big"}
    assert not store.check_index().stale


def _filler(words: int) -> str:
    return " ".join(["Some unrelated prose about browsers and pages."] * (words // 7))


def test_an_identifier_ranks_the_page_that_is_about_it_first(tmp_path: Path) -> None:
    """Both pages name `navigator.wakeLock.request` once; the short release note has the
    better BM25 for the whole identifier, the page whose title and code hold its parts
    ("Wake Lock", `wakeLock`) is the one about it."""
    about = (
        "# Stay awake with the Wake Lock API\n\n## Request a wake lock\n\n"
        "Call `navigator.wakeLock.request('screen')`. Keep `wakeLock` and release the "
        "`wakeLock` later.\n\n" + _filler(400)
    )
    note = "# New in Chrome 84\n\nShips `navigator.wakeLock.request()` and more."
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    store.put(
        [
            _doc("articles/wake-lock", "Stay awake with the Wake Lock API", about),
            _doc("blog/new-in-chrome-84", "New in Chrome 84", note),
            _doc("articles/lock", "Locks", "# Locks\n\nA navigator request to wake a lock."),
        ],
        fetched_at=0.0,
        upstream="test",
    )
    ranked = [h.name for h in store.rank_documents("navigator.wakeLock.request", limit=5)]
    store.close()
    # The page with the parts only comes last (topped up), never ahead of a whole match.
    assert ranked == [
        f"documents/{CHROME}/articles/wake-lock",
        f"documents/{CHROME}/blog/new-in-chrome-84",
        f"documents/{CHROME}/articles/lock",
    ]


def test_the_original_page_ranks_above_its_translation(tmp_path: Path) -> None:
    code = "```js\nawait device.sendFeatureReport(1, data);\n```\n"
    english = "# Connecting to HID devices\n\n" + _filler(300) + "\n\n" + code
    spanish = "# Conexión a dispositivos HID\n\nEnviar informes con el dispositivo.\n\n" + code
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    store.put(
        [
            _doc("articles/hid", "Connecting to HID devices", english),
            _doc("es/articles/hid", "Conexión a dispositivos HID", spanish),
        ],
        fetched_at=0.0,
        upstream="test",
    )
    original, translation = (
        f"documents/{CHROME}/articles/hid",
        f"documents/{CHROME}/es/articles/hid",
    )
    try:
        # The code matches both and BM25 prefers the shorter translation; the English page
        # is the one the reader asked for.
        ranked = store.rank_documents("device.sendFeatureReport", limit=5)
        assert [h.name for h in ranked] == [original, translation]
        assert ranked[0].score >= ranked[1].score
        # A query in the translation's language keeps the translation first.
        spanish_query = "enviar informes dispositivo sendFeatureReport"
        assert store.rank_documents(spanish_query, limit=5)[0].name == translation
    finally:
        store.close()


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("chrome.tts.speak", True),
        ("showPicker", True),
        ("tf.data.Dataset.from_tensor_slices", True),
        ("how do I use navigator.wakeLock.request", True),  # the rest are stopwords
        ("how do I call navigator.wakeLock.request", False),  # "call" is a word
        ("animation-composition", True),
        ("CSS nesting", False),
        ("back/forward cache", False),
        ("RenderingNG architecture", False),
        ("服务工作线程", False),
        ("", False),
    ],
)
def test_a_query_of_identifiers_is_told_from_prose(query: str, code: bool) -> None:
    """Hybrid search ranks a query of code identifiers lexically (mirror.service.search)."""
    assert names_code(query) is code


def test_most_of_a_question_in_the_body_outranks_one_word_in_every_field(tmp_path: Path) -> None:
    """A word of the question in the title, description and headings counts once, at its best
    field: the page whose body holds most of the question's words ranks first, not the page
    that repeats one of them in every field (issue 27)."""
    everywhere = _doc(
        "articles/background-tasks",
        "Background tasks",
        "# Background tasks\n\n## Background work\n\n## Background limits\n\n" + _filler(60),
    )
    everywhere = replace(everywhere, description="Background tasks in the background.")
    answer = _doc(
        "articles/transfers",
        "Transfers",
        "# Transfers\n\nTo resume an interrupted download of a large file while the page is "
        "in the background, keep the partial file and ask the server for the rest.\n\n"
        + _filler(200),
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    store.put(
        [everywhere, answer, _doc("blog/other", "Other", "# Other\n\nNothing here.")],
        fetched_at=0.0,
        upstream="test",
    )
    query = "how do I resume an interrupted download of a large file in the background"
    ranked = [h.name for h in store.rank_documents(query, limit=5)]
    store.close()
    assert ranked[:2] == [answer.name, everywhere.name]


def test_the_section_holding_most_of_a_question_outranks_its_words_in_a_title(
    tmp_path: Path,
) -> None:
    """A long question's first pages are ranked again by their best passage (issue 27): the
    page with one section holding most of its words ranks above the short page holding them in
    its title and description only, which the index, scoring pages whole, ranks first."""
    titled = _doc("articles/quota", "Offline storage quota", "# Overview\n\n" + _filler(60))
    titled = replace(titled, description="The storage quota left for offline data.")
    answer = _doc(
        "articles/caching",
        "Caching guide",
        "# Caching guide\n\n"
        + _filler(700)
        + "\n\n## Before you cache\n\nEstimate how much storage is left for offline data "
        "before you cache large files.\n\n" + _filler(700),
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    store.put(
        [titled, answer, _doc("blog/other", "Other", "# Other\n\nNothing here.")],
        fetched_at=0.0,
        upstream="test",
    )
    query = "how do I estimate the storage quota left for offline data"
    ranked = [h.name for h in store.rank_documents(query, limit=5)]
    # Keywords keep the page-level ranking: the title page is about them.
    keywords = [h.name for h in store.rank_documents("storage quota", limit=5)]
    store.close()
    assert ranked[:2] == [answer.name, titled.name]
    assert keywords[0] == titled.name


def test_a_title_naming_every_keyword_outranks_a_short_title_naming_some(tmp_path: Path) -> None:
    """Each keyword scores its best field alone, so a short title holding two of three (the
    third in the description) beat a longer title holding all three; a title that holds every
    term of the query now adds its score (issue 27)."""
    intro = _doc("blog/memory-inspector", "Introducing the Memory Inspector", "")
    intro = replace(
        intro,
        description="Inspect your ArrayBuffer and Wasm memory.",
        content="# Introducing the Memory Inspector\n\nThe Memory Inspector has landed. "
        + _filler(60),
    )
    guide = _doc(
        "docs/memory-inspector",
        "Memory Inspector: Inspect ArrayBuffer, TypedArray, DataView, and Wasm Memory",
        "# Memory Inspector: Inspect ArrayBuffer, TypedArray, DataView, and Wasm Memory\n\n"
        "Open the Memory Inspector from a breakpoint. " + _filler(1200),
    )
    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    store.put(
        [intro, guide, _doc("blog/other", "Other", "# Other\n\nNothing here.")],
        fetched_at=0.0,
        upstream="test",
    )
    ranked = [h.name for h in store.rank_documents("memory inspector wasm", limit=5)]
    store.close()
    assert ranked == [guide.name, intro.name]
