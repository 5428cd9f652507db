"""The change log: every write that changes what the store holds appends exactly one event,
in the write's transaction, on SQLite and PostgreSQL; read newest first through filters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirror.changes.events import ChangeFilter
from mirror.errors import InvalidInput
from mirror.models import Document, content_sha256
from mirror.store.store import Store

pytestmark = pytest.mark.both_backends

A, B, C = (f"documents/developer.chrome.com/docs/{p}" for p in ("a", "b", "c"))
OTHER = "documents/web.dev/articles/x"


def doc(name: str, content: str | None, update_time: str | None = None) -> Document:
    return Document(name, f"https://{name[10:]}", content, title=name.rsplit("/", 1)[-1],
                    update_time=update_time)  # fmt: skip


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    yield opened
    opened.close()


def test_each_write_path_appends_one_event_per_change(store: Store) -> None:
    store.put([doc(A, "# A\n\none", "2026-01-01T00:00:00Z"), doc(B, "# B")], fetched_at=10,
              upstream="test")  # fmt: skip
    # The same content again (a refetch that found nothing new) appends nothing.
    store.put([doc(A, "# A\n\none", "2026-01-01T00:00:00Z")], fetched_at=11, upstream="test")
    store.put_stream(iter([doc(A, "# A\n\ntwo", "2026-02-01T00:00:00Z"), doc(C, "c")]),
                     fetched_at=20, upstream="import f")  # fmt: skip
    store.apply_stream(iter([B, doc(OTHER, "x")]), fetched_at=30, upstream="snapshot s")
    events = store.changes(ChangeFilter())
    assert [(e.name, e.kind, e.observed_at) for e in events] == [
        (B, "removed", 30), (OTHER, "added", 30),  # a stream's removals come last
        (C, "added", 20), (A, "changed", 20),
        (B, "added", 10), (A, "added", 10),
    ]  # fmt: skip
    ids = [e.id for e in events]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    change = events[3]
    assert (change.old_sha256, change.new_sha256) == (
        content_sha256("# A\n\none"), content_sha256("# A\n\ntwo"))  # fmt: skip
    assert (change.old_update_time, change.new_update_time) == (
        "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z")  # fmt: skip
    assert change.classes == ("text",) and change.summary == "text changed"
    removed = events[0]
    assert removed.old_sha256 == content_sha256("# B") and removed.new_sha256 is None


def test_filters_select_newest_first(store: Store) -> None:
    store.put([doc(A, "a"), doc(OTHER, "o")], fetched_at=100, upstream="test")
    store.put([doc(A, "a\n\n## New heading\n\nmore")], fetched_at=200, upstream="test")
    store.put([doc(B, "b")], fetched_at=300, upstream="test")
    everything = store.changes(ChangeFilter())
    newest = everything[0].id
    assert [e.name for e in store.changes(ChangeFilter(limit=1))] == [B]
    assert [e.name for e in store.changes(ChangeFilter(since=200))] == [B, A]
    assert [e.id for e in store.changes(ChangeFilter(since_id=newest - 1))] == [newest]
    assert [e.id for e in store.changes(ChangeFilter(before_id=newest, limit=1))] == [newest - 1]
    chrome = ChangeFilter(prefix="documents/developer.chrome.com/")
    assert {e.name for e in store.changes(chrome)} == {A, B}
    assert [e.kind for e in store.changes(ChangeFilter(kind="changed"))] == ["changed"]
    structure = store.changes(ChangeFilter(kind="structure"))
    assert [(e.name, e.classes) for e in structure] == [(A, ("structure", "text"))]
    lock = store.changes(ChangeFilter(names=frozenset({OTHER, C})))
    assert [(e.name, e.kind) for e in lock] == [(OTHER, "added")]


def test_a_failed_write_leaves_no_event(store: Store) -> None:
    store.put([doc(A, "one")], fetched_at=1, upstream="test")

    def broken() -> Iterator[Document]:
        yield doc(A, "two")
        yield doc(B, "b")
        raise RuntimeError("bad line")

    with pytest.raises(RuntimeError):
        store.put_stream(broken(), fetched_at=2, upstream="import f")
    assert [(e.name, e.kind) for e in store.changes(ChangeFilter())] == [(A, "added")]


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidInput, match="unknown change kind 'renamed'"):
        ChangeFilter(kind="renamed")


def test_dense_and_sparse_ranges_answer_alike(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mirror.store.tables import changes

    for step in range(6):
        store.put([doc(A, f"a{step}"), doc(B, f"b{step}"), doc(OTHER, f"o{step}")],
                  fetched_at=100 + step, upstream="test")  # fmt: skip
    filters = [ChangeFilter(prefix="documents/developer.chrome.com/", limit=5),
               ChangeFilter(since=103, limit=4),
               ChangeFilter(prefix=A, since=102, kind="changed")]  # fmt: skip
    sparse = [store.changes(f) for f in filters]  # fewer than DENSE matches: via the index
    monkeypatch.setattr(changes, "DENSE", 2)  # now every range is dense: the key is walked
    assert [store.changes(f) for f in filters] == sparse
    assert [e.name for e in sparse[0]] == [B, A, B, A, B]
    assert [e.observed_at for e in sparse[2]] == [105, 104, 103, 102]


def test_an_upgraded_store_starts_its_log_from_the_kept_versions(
    db_url: str, request: pytest.FixtureRequest
) -> None:
    from sqlalchemy import text

    from mirror.store.db import engine as engines
    from mirror.store.db.migrate import upgrade

    if db_url.startswith("postgresql"):  # the fixture's database is migrated already
        server = request.getfixturevalue("postgres_server")
        db_url = server.fresh_database(migrated=False)
        request.addfinalizer(lambda: server.drop_database(db_url))
    old = engines.create(db_url)
    upgrade(old, "0013")
    columns = "(name, version, sha256, update_time, fetched_at, upstream)"
    with old.begin() as conn:
        conn.execute(
            text(f"INSERT INTO document_versions {columns} VALUES (:n, :v, :s, :u, :f, 'old')"),
            [{"n": A, "v": 1, "s": "a" * 64, "u": "2026-01-01T00:00:00Z", "f": 5.0},
             {"n": A, "v": 2, "s": "b" * 64, "u": "2026-02-01T00:00:00Z", "f": 9.0},
             {"n": B, "v": 3, "s": "c" * 64, "u": None, "f": 7.0}],  # 1 and 2 pruned
        )  # fmt: skip
    old.dispose()
    store = Store.open(db_url)
    try:
        seeded = store.changes(ChangeFilter())
        assert [(e.name, e.kind, e.observed_at, e.old_sha256, e.new_sha256) for e in seeded] == [
            (A, "changed", 9.0, "a" * 64, "b" * 64),
            (B, "changed", 7.0, None, "c" * 64),  # its predecessor was pruned before the log
            (A, "added", 5.0, None, "a" * 64),
        ]
        assert seeded[0].old_update_time == "2026-01-01T00:00:00Z"
        assert seeded[0].classes is None and "not classified" in seeded[0].headline()
        assert seeded[1].diff_command() == f"dk-mirror diff {B} --to {'c' * 12}"
        store.put([doc(C, "c")], fetched_at=20, upstream="test")
        assert store.changes(ChangeFilter(limit=1))[0].id > seeded[0].id
    finally:
        store.close()
