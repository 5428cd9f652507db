"""The search index beside the documents: no copy of the text, rebuildable, checked, grouped.

The store is the source of truth: `index check` finds an index that disagrees with the
documents, `index rebuild` rebuilds it from them, and no search returns a document that is not
in the store. Results are grouped by document: at most two chunks of a page, its best first.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import tantivy
from sqlalchemy import inspect, text

from mirror.models import Document
from mirror.search import lexical
from mirror.store.store import Store
from mirror.store.textindex.sqlite.index import name_at

pytestmark = pytest.mark.both_backends

SOURCE = "developer.chrome.com"


def _doc(path: str, title: str, content: str) -> Document:
    return Document(
        name=f"documents/{SOURCE}/{path}",
        uri=f"https://{SOURCE}/{path}",
        content=content,
        description=f"About {title.lower()}.",
        data_source=SOURCE,
        title=title,
    )


def _long_page(path: str, title: str, sections: list[tuple[str, str]]) -> Document:
    # Sections of ~1.5 KB each, so every section is a chunk of its own.
    body = "\n\n".join(
        f"## {head}\n\n" + (words + " ") * (1500 // (len(words) + 1)) for head, words in sections
    )
    return _doc(path, title, f"# {title}\n\n{body}\n")


DOCS = [
    _long_page(
        "otters",
        "River otters",
        [
            ("Habitat", "otters live in rivers and lakes"),
            ("Diet", "otters eat fish crabs and frogs"),
            ("Play", "young animals slide down muddy banks"),
            ("Fishing", "a fishing otter dives for fish again and again"),
        ],
    ),
    _doc("sea", "Sea otters", "# Sea otters\n\nSea otters float on their backs and eat fish."),
    _doc(
        "ident",
        "Messaging",
        "# Messaging\n\nListen with `chrome.runtime.onMessage` and call `getUserMedia()`.",
    ),
    _doc(
        "ja",
        "サービスワーカー",
        "# サービスワーカー\n\nサービスワーカーはネットワークリクエストをキャッシュします。",
    ),
    _doc("zh", "缓存", "# 缓存\n\n服务工作线程可以缓存网络请求。"),
    _doc("ko", "캐시", "# 캐시\n\n서비스워커는네트워크요청을캐시합니다."),
]


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    opened.put(DOCS, fetched_at=0.0, upstream="test")
    yield opened
    opened.close()


def _names(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.name.rsplit("/", 1)[-1] for h in hits]


def test_a_page_gives_at_most_two_chunks_its_best_first(store: Store) -> None:
    hits = store.search_local("otters fish", limit=10)
    names = _names(hits)
    assert names.count("otters") == 2 and set(names) == {"otters", "sea"}
    otters = [h for h in hits if h.name.endswith("/otters")]
    # The chunks about fish (Diet, Fishing), not the first chunk of the page.
    assert {h.heading.rsplit(" > ", 1)[-1] for h in otters} == {"Diet", "Fishing"}
    assert names.index("otters") + 1 == names.index("otters", names.index("otters") + 1)


def test_pages_follow_on_without_repeating(store: Store) -> None:
    everything = store.search_local("otters fish", limit=10)
    pages = [store.search_local("otters fish", limit=1, offset=o) for o in range(len(everything))]
    assert [h for page in pages for h in page] == everything


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("chrome.runtime.onMessage", "ident"),
        ("runtime.onMessage", "ident"),
        ("onMessage", "ident"),
        ("message listener", "ident"),  # camelCase parts, stemmed
        ("getUserMedia", "ident"),
        ("user media", "ident"),
        ("ネットワークリクエスト", "ja"),
        ("キャッシュ", "ja"),
        ("缓存网络请求", "zh"),
        ("网络", "zh"),
        ("네트워크요청", "ko"),
        ("otter", "otters"),  # plural in the page, singular in the query
        ("fished", "otters"),
        ("ottres", "otters"),  # a typo, corrected from the index's vocabulary
    ],
)
def test_identifiers_cjk_stems_and_typos_are_found(store: Store, query: str, expected: str) -> None:
    assert expected in _names(store.search_local(query, limit=5)), query


def test_a_typo_is_corrected_from_the_vocabulary_as_it_is_now(store: Store) -> None:
    """Typo correction keeps the vocabulary it read (SQLite: per process and index state); a
    write that brings the right spelling, or removes it, shows in the next search."""
    assert _names(store.search_local("badgres", limit=5)) == []  # nothing close in the index
    store.put(
        [_doc("badger", "Badgers", "# Badgers\n\nBadgers dig setts.")],
        fetched_at=0.0,
        upstream="test",
    )
    assert _names(store.search_local("badgres", limit=5)) == ["badger"]
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM documents WHERE name LIKE '%/badger'"))
    assert _names(store.search_local("badgres", limit=5)) == []


def test_stopwords_fit_docs() -> None:
    assert [t.text for t in lexical.query_terms("How do I use the Storage API to get quota?")] == [
        "Storage",
        "API",
        "quota",
    ]


def test_the_index_holds_no_copy_of_the_text(store: Store) -> None:
    content = sum(len(d.content or "") for d in DOCS)
    with store.engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        assert "doc_fts_content" not in tables and "chunks" not in tables
        columns = {c["name"] for c in inspect(conn).get_columns("search_docs")}
        assert not columns & {"title", "description", "body", "content"}
        side = conn.execute(
            text("SELECT coalesce(sum(length(headings) + length(side)), 0) FROM search_docs")
        ).scalar_one()
    assert side < content / 2
    if store.engine.dialect.name == "sqlite":
        # The tantivy index stores each page's name alone; the text is read from the store.
        index = store.text_index()
        with store.engine.connect() as conn, conn.begin():
            searcher = index.searcher(conn.connection.driver_connection)
            hits = searcher.search(tantivy.Query.all_query(), 100)
            assert len(hits) == len(DOCS)
            assert all(set(searcher.doc(hit).to_dict()) == {"name"} for _, hit in hits)


def _damage(store: Store) -> None:
    """What a bug or a lost file could leave: one page not indexed, and an entry (SQLite) or
    words (PostgreSQL) the store does not hold."""
    if store.engine.dialect.name == "postgresql":
        with store.engine.begin() as conn:
            conn.execute(text("DELETE FROM search_docs WHERE name LIKE '%/sea'"))
            conn.execute(
                text(
                    "UPDATE search_docs SET words = to_tsvector('english', 'ghost words') "
                    "WHERE name LIKE '%/ident'"
                )
            )
        return
    index = store.text_index()
    with store.engine.connect() as conn, conn.begin():
        index.searcher(conn.connection.driver_connection)  # synced first
    writer = index._open().writer(32 << 20, 2)
    writer.delete(f"documents/{SOURCE}/sea")
    ghost = f"documents/{SOURCE}/ghost"
    writer.add(ghost, tantivy.Document(name=ghost, body="ghost words"))
    writer.commit()
    writer.wait_merging_threads()


def test_check_finds_a_damaged_index_and_rebuild_repairs_it(store: Store) -> None:
    assert not store.check_index().stale
    _damage(store)
    state = store.check_index()
    assert state.stale and state.indexed == len(DOCS) - 1
    if store.engine.dialect.name == "postgresql":
        assert not state.consistent and state.orphans == 0
        assert "ident" not in _names(store.search_local("getUserMedia"))
        assert "ident" in _names(store.search_local("ghost words"))  # what check found
    else:
        assert state.orphans == 1
        assert store.search_local("ghost words") == []  # never a page the store lacks
    assert "sea" not in _names(store.search_local("sea otters"))
    assert store.rebuild_index() == len(DOCS)
    state = store.check_index()
    assert not state.stale and state.consistent and state.indexed == len(DOCS)
    assert _names(store.search_local("sea otters"))[0] == "sea"


def test_deleted_and_changed_documents_leave_the_index_consistent(store: Store) -> None:
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM documents WHERE name LIKE '%/sea'"))
        conn.execute(
            text(
                "UPDATE documents SET content = '# Otters\n\nBadgers now.' WHERE name LIKE '%/otters'"
            )
        )
    assert "sea" not in _names(store.search_local("sea otters", limit=10))
    if store.engine.dialect.name == "postgresql":
        # The changed page lost its entry (the trigger) and awaits reindexing by a put.
        state = store.check_index()
        assert state.consistent and state.orphans == 0 and state.indexed == len(DOCS) - 2
        store.rebuild_index()
    # SQLite: the triggers logged both writes and the search above indexed them.
    assert _names(store.search_local("badgers")) == ["otters"]
    state = store.check_index()
    assert not state.stale and state.indexed == len(DOCS) - 1


@pytest.mark.sqlite_only  # the tantivy index is SQLite's
def test_a_crash_between_the_store_and_the_index_is_repaired(db_url: str) -> None:
    """The index records the last change it holds after tantivy commits; a crash before that
    (here: the record rolled back by hand) makes the next search apply the changes again,
    and an index folder lost altogether is rebuilt."""
    store = Store.open(db_url)
    try:
        store.put(DOCS, fetched_at=0.0, upstream="test")
        assert _names(store.search_local("sea otters"))[0] == "sea"
        index = store.text_index()
        seq = index.state()
        assert seq
        store.put(
            [_doc("badger", "Badgers", "# Badgers\n\nBadgers dig setts.")],
            fetched_at=1.0,
            upstream="test",
        )
        assert _names(store.search_local("setts")) == ["badger"]
        # As if the process died before recording the last sync.
        with store.engine.connect() as conn:
            index._save_state(seq, name_at(conn.connection.driver_connection, seq))
        with store.engine.connect() as conn, conn.begin():
            assert index.lag(conn.connection.driver_connection) == 1
        assert _names(store.search_local("setts")) == ["badger"]
        assert index_count(store) == len(DOCS) + 1  # applied again, not twice
        folder = index.folder
        assert folder is not None
        store.close()
        shutil.rmtree(folder)
        store = Store.open(db_url)
        assert _names(store.search_local("setts")) == ["badger"]
        assert not store.check_index().stale
    finally:
        store.close()


def index_count(store: Store) -> int:
    with store.engine.connect() as conn, conn.begin():
        return int(store.text_index().searcher(conn.connection.driver_connection).num_docs)


def test_index_commands(cli_offline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = cli_offline
    assert run("import", "--sample").exit_code == 0
    result = run("index", "check", "--json")
    assert result.exit_code == 0
    state = json.loads(result.stdout)
    assert state["stale"] is False and state["indexed"] == state["documents"] == 50
    rebuilt = run("index", "rebuild")
    assert rebuilt.exit_code == 0 and "indexed 50 documents" in rebuilt.stderr


def test_offline_pages_through_the_service_are_grouped_and_follow_on(db_url: str) -> None:
    from mirror.config import Settings
    from mirror.service import Mirror

    url = db_url
    Store.open(url).close()
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        mirror.import_sample()  # ordinary pages around the test's own
        store = Store.open(url)
        store.put(DOCS, fetched_at=0.0, upstream="test")
        store.close()
        first = mirror.search_documents("otters fish", page_size=2)
        assert [r.parent.rsplit("/", 1)[-1] for r in first.page.results] == ["otters"] * 2
        assert first.page.results[0].document is not None
        assert first.page.next_page_token
        second = mirror.search_documents(
            "otters fish", page_size=2, page_token=first.page.next_page_token
        )
        assert second.page.results[0].parent.endswith("/sea")
        scores = [r.relevance_score for r in (*first.page.results, *second.page.results)]
        assert scores == sorted(scores, reverse=True)


def test_a_common_match_is_ranked_in_the_head_words_first_on_postgresql(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's plan (tantivy's top-k search has none to spy on)")
    from mirror.store.textindex.postgres import search as pg_search

    store = Store.open(db_url)
    try:
        store.put(DOCS, fetched_at=0.0, upstream="test")
        ranked: list[str] = []
        real = pg_search._RANKED

        class Spy(dict):  # type: ignore[type-arg]
            def __getitem__(self, column: str):  # type: ignore[no-untyped-def]
                ranked.append("head" if column == pg_search.HEAD_WORDS else "all")
                return real[column]

        monkeypatch.setattr(pg_search, "_RANKED", Spy(real))
        monkeypatch.setattr(pg_search, "COMMON", 2)  # "otters" is in two pages: common here
        assert sorted(_names(store.rank_documents("otters", limit=2))) == ["otters", "sea"]
        assert ranked == ["head"]  # title, headings and description fill the page
        ranked.clear()
        # "fish" is in one heading: the heads do not fill a page of three; every match ranks.
        assert set(_names(store.rank_documents("fish", limit=3))) == {"otters", "sea"}
        assert ranked == ["head", "all"]
    finally:
        store.close()
