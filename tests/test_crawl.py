"""Mirror.crawl against the test upstream serving the corpus: scope, depth, search,
missing names, limits and 429s. The expected sets come from the corpus' raw Markdown with
simple regular expressions of the test's own, not from the crawler's code."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror.config import Settings
from mirror.service import Mirror
from mirror.service.crawl import CrawlOptions, CrawlProgress, CrawlReport, make_spec
from tests.conftest import no_wait_retry, query_store
from tests.emulator import Emulator, Fault
from tests.emulator_fixtures import corpus_documents

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

CORPUS = corpus_documents()
BY_NAME = {d["name"]: d for d in CORPUS}
CHROME = "documents/developer.chrome.com/"
SEED = CHROME + "docs/extensions/migrating"

# The oracle: links written `[text](/path)`, `[text](https://developer.chrome.com/path)` or
# as reference definitions `[label]: /path`, outside ``` blocks and `inline code`.
_FENCED = re.compile(r"```.*?```", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_TARGET = r"(/[^)\s#?]*|https://developer\.chrome\.com/[^)\s#?]*)"
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(" + _TARGET)
_DEFINITION = re.compile(r"^\[[^\]\n]+\]:\s*" + _TARGET, re.MULTILINE)


def _oracle_links(content: str) -> list[str]:
    text = _INLINE_CODE.sub("", _FENCED.sub("", content))
    found = []
    for target in _LINK.findall(text) + _DEFINITION.findall(text):
        path = target.removeprefix("https://developer.chrome.com")
        found.append(CHROME + "/".join(p for p in path.split("/") if p))
    return found


def _expected(seed: str, prefix: str, depth: int) -> dict[str, int]:
    """name -> depth of every name a breadth-first walk reaches, links kept inside `prefix`."""
    seen = {seed: 0}
    level = [seed]
    for hop in range(1, depth + 1):
        following = []
        for name in level:
            for child in _oracle_links(BY_NAME[name]["content"]) if name in BY_NAME else []:
                if child.startswith(prefix) and child not in seen:
                    seen[child] = hop
                    following.append(child)
        level = following
    return seen


@pytest.fixture
def upstream() -> Iterator[Emulator]:
    """The test upstream serving the whole test corpus (633 real pages)."""
    with Emulator(CORPUS) as running:
        yield running


@pytest.fixture
def crawler(db_url: str, upstream: Emulator) -> Iterator[Mirror]:
    """A Mirror on the test's store in front of `upstream`; no real waits, no pacing."""
    settings = Settings(
        db_url=db_url, upstream=upstream.base_url, api_key="test-key", get_per_minute=100_000
    )
    with Mirror(settings, retry=no_wait_retry()) as mirror:
        yield mirror


def _frontier(db_url: str) -> dict[str, tuple[int, str, str]]:
    rows = query_store(db_url, "SELECT name, depth, state, found_from FROM crawl_frontier")
    return {name: (depth, state, found) for name, depth, state, found in rows}


def _asked(upstream: Emulator) -> list[str]:
    """Every name asked for in a batchGet, in order (repeats kept)."""
    return [n for r in upstream.requests if "batchGet" in r.path for n in r.query["names"]]


def _crawl(mirror: Mirror, *seeds: str, **spec: Any) -> CrawlReport:
    # Links only: these tests follow links; tests/test_readme_crawl.py covers section search.
    options = spec.pop("options", CrawlOptions(links_only=True))
    return mirror.crawl(make_spec(seeds, **spec), options)


def test_a_depth_2_crawl_inside_a_prefix_fetches_exactly_the_linked_set(
    crawler: Mirror, upstream: Emulator, db_url: str
) -> None:
    prefix = CHROME + "docs/"
    expected = _expected(SEED, prefix, 2)
    present = {n for n in expected if n in BY_NAME}
    assert len(present) >= 5 and len(expected) - len(present) >= 5  # the test means something

    report = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=2)

    frontier = _frontier(db_url)
    assert {n: depth for n, (depth, _, _) in frontier.items()} == expected
    fetched = {n for n, (_, state, _) in frontier.items() if state == "fetched"}
    assert fetched == present
    assert set(report.missing) == set(expected) - present
    assert report.fetched == len(present) and report.failed == [] and report.known == len(expected)
    assert {s.name for s in crawler.list_documents()} == present
    # Nothing outside the expected set was asked for (a batch holding a missing name is
    # narrowed down, so names may be asked more than once).
    assert set(_asked(upstream)) == set(expected)


def test_a_finished_crawl_run_again_fetches_nothing_and_asks_nothing(
    crawler: Mirror, upstream: Emulator
) -> None:
    first = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=2)
    upstream.reset()
    again = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=2)
    assert again.fetched == 0 and again.had == first.fetched
    assert again.missing == first.missing and not again.resumed
    assert _asked(upstream) == []  # stored pages are read from the store, missing ones remembered


def test_missing_names_are_remembered_with_when_and_asked_again_only_on_request(
    crawler: Mirror, upstream: Emulator, db_url: str
) -> None:
    first = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=1)
    assert first.missing
    remembered = dict(query_store(db_url, "SELECT name, first_missing_at FROM missing_documents"))
    assert set(remembered) == set(first.missing) and all(t > 0 for t in remembered.values())

    upstream.reset()
    spec: dict[str, Any] = {"prefixes": ["developer.chrome.com/docs/"], "max_depth": 1}
    _crawl(crawler, SEED, **spec)
    assert _asked(upstream) == []
    _crawl(crawler, SEED, **spec, options=CrawlOptions(missing_max_age=3600, links_only=True))
    assert _asked(upstream) == []  # found missing moments ago: younger than an hour
    _crawl(crawler, SEED, **spec, options=CrawlOptions(missing_max_age=0, links_only=True))
    assert set(_asked(upstream)) == set(first.missing)
    upstream.reset()
    again = _crawl(crawler, SEED, **spec, options=CrawlOptions(retry_missing=True, links_only=True))
    assert set(_asked(upstream)) == set(first.missing) and again.missing == first.missing


def test_search_discovery_adds_the_results_inside_the_prefix(
    crawler: Mirror, upstream: Emulator, db_url: str
) -> None:
    report = _crawl(
        crawler,
        searches=["keras layers"],
        filter='data_source = "www.tensorflow.org"',
        search_pages=2,
        prefixes=["www.tensorflow.org/"],
        max_depth=0,
    )
    searches = [r for r in upstream.requests if "searchDocumentChunks" in r.path]
    assert 1 <= len(searches) <= 2
    assert all(r.query["filter"] == ['data_source = "www.tensorflow.org"'] for r in searches)
    frontier = _frontier(db_url)
    assert frontier and all(found == "search: keras layers" for _, _, found in frontier.values())
    assert all(n.startswith("documents/www.tensorflow.org/") for n in frontier)
    assert report.fetched == len(frontier) and not report.missing


def test_without_a_prefix_links_are_followed_below_the_seed_only(
    crawler: Mirror, db_url: str
) -> None:
    _crawl(crawler, SEED, max_depth=3)
    assert all(n == SEED or n.startswith(SEED + "/") for n in _frontier(db_url))
    assert len(_frontier(db_url)) > 1


def test_max_docs_caps_the_names_taken_breadth_first(crawler: Mirror, db_url: str) -> None:
    expected = _expected(SEED, CHROME + "docs/", 3)
    report = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_docs=8)
    frontier = _frontier(db_url)
    assert report.known == len(frontier) == 8
    # Breadth-first: nothing deeper is taken while a shallower page is left out.
    depths = sorted(expected.values())
    assert sorted(d for d, _, _ in frontier.values()) == depths[:8]


def test_429s_slow_the_crawl_but_it_completes(crawler: Mirror, upstream: Emulator) -> None:
    upstream.inject(Fault("status", status=429, retry_after="1"), times=-1, rate=0.4)
    seen: list[CrawlProgress] = []
    spec = make_spec([SEED], prefixes=["developer.chrome.com/docs/"], max_depth=2)
    report = crawler.crawl(spec, CrawlOptions(concurrency=3, links_only=True), seen.append)
    expected = _expected(SEED, CHROME + "docs/", 2)
    assert report.failed == [] and report.retries > 0
    assert report.fetched == len([n for n in expected if n in BY_NAME])
    # The progress seen along the way: never more done than known, ending complete, and
    # the retries counted as they happened.
    assert all(p.done <= p.known for p in seen)
    assert seen[-1].done == seen[-1].known == report.known
    assert seen[-1].retries == report.retries and seen[-1].fetched == report.fetched


def test_a_batch_that_keeps_failing_is_reported_and_a_rerun_fetches_only_it(
    crawler: Mirror, upstream: Emulator
) -> None:
    linked = [n for n in _expected(SEED, CHROME + "docs/", 1) if n in BY_NAME and n != SEED]
    upstream.inject(Fault("status", status=503), times=-1, name=linked[0])
    report = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=1)
    assert linked[0] in report.failed and report.error is not None
    upstream.reset()
    again = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=1)
    assert again.failed == [] and again.resumed
    assert set(report.failed) <= set(_asked(upstream))
    assert not set(_asked(upstream)) - set(report.failed)


def test_crawl_inputs_are_checked_before_anything_runs(tmp_path: Path) -> None:
    from mirror.errors import InvalidInput

    with pytest.raises(InvalidInput, match="nothing to crawl"):
        make_spec([])
    with pytest.raises(InvalidInput, match="--filter applies to --search"):
        make_spec([SEED], filter='data_source = "web.dev"')
    with pytest.raises(InvalidInput):
        make_spec([SEED], searches=["x" * 501])
    spec = make_spec(
        ["https://developer.chrome.com/docs/extensions/migrating"],
        prefixes=["developer.chrome.com/docs/"],
    )
    assert spec.seeds == (SEED,) and spec.prefixes == (CHROME + "docs/",)
    assert spec.key == make_spec([SEED], prefixes=[CHROME + "docs/"]).key


def _batches() -> list[Any]:
    """Three batches at depth 0 whose pages link to overlapping names (one missing page)."""
    from mirror.models import Document
    from mirror.store.tables.crawls import BatchChanges

    page = "documents/docs.example.dev/guide/"
    out = []
    for i, (links, missing) in enumerate(
        ((["a", "b"], []), (["b", "c"], ["gone"]), (["a", "d"], []))
    ):
        doc = Document(name=f"{page}p{i}", content=f"# page {i}\n").with_derived_fields()
        changes = BatchChanges(child_depth=1)
        changes.documents.append(doc)
        changes.found.append(doc.name)
        changes.states[doc.name] = "fetched"
        changes.children.extend((page + link, doc.name) for link in links)
        for name in missing:
            changes.states[page + name] = "missing"
            changes.missing.append(page + name)
        out.append(changes)
    return out


def test_a_group_commit_leaves_what_batch_by_batch_commits_leave(another_db_url: Any) -> None:
    from mirror.store.store import Store

    def frontier_after(groups: list[list[Any]]) -> tuple[list[Any], list[Any]]:
        url = another_db_url()
        store = Store.open(url)
        try:
            seeds = [f"documents/docs.example.dev/guide/p{i}" for i in range(3)]
            seeds.append("documents/docs.example.dev/guide/gone")
            crawl = store.crawls.begin("k", "{}", seeds, now=1.0, max_docs=7)
            for group in groups:
                store.crawls.commit(crawl.id, group, fetched_at=2.0, upstream="u", max_docs=7)
        finally:
            store.close()
        rows = query_store(
            url, "SELECT name, depth, seq, state, found_from FROM crawl_frontier ORDER BY seq"
        )
        other = query_store(
            url,
            "SELECT name FROM documents UNION ALL SELECT name FROM missing_documents ORDER BY 1",
        )
        return rows, other

    one_by_one = frontier_after([[b] for b in _batches()])
    grouped = frontier_after([_batches()])
    assert grouped == one_by_one
    rows = {
        name.rsplit("/", 1)[1]: (state, found.rsplit("/", 1)[-1])
        for name, _, _, state, found in grouped[0]
    }
    # First found from the first page linking to it; max_docs (7) leaves "d" out.
    assert rows["a"] == ("queued", "p0") and rows["c"] == ("queued", "p1") and "d" not in rows
    assert rows["p1"] == ("fetched", "seed") and rows["gone"] == ("missing", "seed")
    assert [name for (name,) in grouped[1]].count("documents/docs.example.dev/guide/gone") == 1


def test_the_report_counts_the_calls_spent_on_names_upstream_lacks(
    crawler: Mirror, upstream: Emulator
) -> None:
    report = _crawl(crawler, SEED, prefixes=["developer.chrome.com/docs/"], max_depth=2)
    batches = [r for r in upstream.requests if "batchGet" in r.path]
    answered_404 = sum(1 for r in batches if r.status == 404)
    assert report.missing and answered_404 >= len(report.missing)  # narrowing costs calls
    assert report.not_found_calls == answered_404 and report.requests == len(batches)
    assert report.to_json()["notFoundCalls"] == answered_404


def test_progress_puts_the_quota_time_of_what_is_queued_in_the_eta(
    db_url: str, upstream: Emulator
) -> None:
    settings = Settings(db_url=db_url, upstream=upstream.base_url, api_key="test-key",
                        get_per_minute=10)  # fmt: skip
    seen: list[CrawlProgress] = []
    with Mirror(settings, retry=no_wait_retry()) as mirror:
        spec = make_spec([SEED], prefixes=["developer.chrome.com/docs/"], max_depth=2)
        mirror.crawl(spec, CrawlOptions(links_only=True), seen.append)
    interval = (60 + 0.5) / 10  # Rule.per_minute(10): burst 1, 6.05 s between calls
    for p in seen:
        queued = p.known - p.done
        assert abs(p.paced_left - -(-queued // 20) * interval) < 1e-6
    assert any(p.paced_left > 0 for p in seen) and seen[-1].paced_left == 0
