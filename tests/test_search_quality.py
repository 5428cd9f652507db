"""Local search finds the right page: hand-written queries over real pages (tests/data/corpus).

Each query was written by reading its expected page (title, description, headings, text), not
by looking at the ranking; the expected page must be among the top 5 hits. The pages are a
subset of the shared corpus that keeps, for every query here, the pages that compete with the
expected one (tests/data/make_corpus_subset.py; rerun it after adding a query): when it was
made, each expected page ranked exactly where it ranks in the full 2,083-page corpus.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.store.store import Store

from .emulator_fixtures import corpus_documents

CHROME = "developer.chrome.com/"
TF = "www.tensorflow.org/"

QUERIES = [
    # One word
    ("hyphens", CHROME + "blog/css-hyphens"),
    ("omnibox", CHROME + "docs/extensions/reference/omnibox"),
    ("fencedframe", CHROME + "docs/privacy-sandbox/fenced-frame"),
    ("pylint", TF + "community/contribute/code_style"),
    ("word2vec", TF + "r1/tutorials/representation/word2vec"),
    ("navigator.storage.estimate", CHROME + "blog/estimating-available-storage-space"),
    ("headless=new", CHROME + "articles/new-headless"),
    # Two words
    ("barcode detection", CHROME + "articles/shape-detection"),
    ("partitioned cookies", CHROME + "blog/chips-origin-trial"),
    ("side panel", CHROME + "docs/extensions/reference/sidePanel"),
    ("linear() easing", CHROME + "articles/css-linear-easing-function"),
    ("GATT characteristic", CHROME + "articles/bluetooth"),
    # Three or more words
    ("enable gzip text compression", CHROME + "docs/lighthouse/performance/uses-text-compression"),
    ("size-adjust ascent-override font fallback", CHROME + "blog/font-fallbacks"),
    ("Chrome Web Store payments deprecated", CHROME + "docs/webstore/cws-payments-deprecation"),
    ("LSTM language model Penn Tree Bank", TF + "r1/tutorials/sequences/recurrent"),
    ("non-NVIDIA GPU device plugin", TF + "install/gpu_plugins"),
    ("semantic versioning MAJOR.MINOR.PATCH tensorflow", TF + "guide/versions"),
    ("speech recognition yes no up down", TF + "r1/tutorials/sequences/audio_recognition"),
    # Natural-language questions
    (
        "how do I migrate my extension to a service worker",
        CHROME + "docs/extensions/migrating/to-service-workers",
    ),
    ("how can a site detect that the user is idle", CHROME + "articles/idle-detection"),
    ("how do I stream a request body with fetch", CHROME + "articles/fetch-streaming-requests"),
    (
        "how do I avoid a flash of invisible text while web fonts load",
        CHROME + "docs/lighthouse/performance/font-display",
    ),
    (
        "retry failed requests when connectivity returns",
        CHROME + "docs/workbox/modules/workbox-background-sync",
    ),
    ("why do redirects slow down my page", CHROME + "docs/lighthouse/performance/redirects"),
    ("how do I register my web app as a share target", CHROME + "articles/web-share-target"),
    ("run TensorFlow in a Docker container with GPU support", TF + "install/docker"),
    ("where does tensorflow_hub cache downloaded models", TF + "hub/caching"),
    (
        "how do I propose a new TensorFlow feature with an RFC",
        TF + "community/contribute/rfc_process",
    ),
    (
        "make cross-origin requests from an extension",
        CHROME + "docs/extensions/mv3/network-requests",
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path: Path = tmp_path_factory.mktemp("quality") / "corpus.sqlite3"
    opened = Store.open(f"sqlite:///{path}")
    records = corpus_documents("developer.chrome.com-en") + corpus_documents("tensorflow.org")
    docs = [Document.from_api(r).with_derived_fields() for r in records]
    # Hundreds of ordinary pages besides the expected ones, or ranking would prove little.
    assert len(docs) > 10 * len(QUERIES)
    assert opened.put(docs, fetched_at=0.0, upstream="corpus") == len(docs)
    yield opened
    opened.close()


# Known misses, kept visible (strict: fixing one turns its test red until it is moved out).
# (None now: "make cross-origin requests from an extension" ranked 6th under FTS5, behind four
# policy pages whose titles say "cross origin"; tantivy's per-field length norms put it in the
# top 5.)
MISSES: dict[str, str] = {}
CASES = [
    pytest.param(q, e, id=q, marks=[pytest.mark.xfail(strict=True, reason=MISSES[q])])
    if q in MISSES
    else pytest.param(q, e, id=q)
    for q, e in QUERIES
]


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_expected_page_is_in_the_top_5(store: Store, query: str, expected: str) -> None:
    names = [hit.name for hit in store.search_local(query, limit=5)]
    assert "documents/" + expected in names, f"{query!r}: got {names}"


def test_the_query_set_is_broad() -> None:
    words = [len(q.split()) for q, _ in QUERIES]
    assert len(QUERIES) - len(MISSES) >= 20
    assert min(words) == 1 and sum(w == 2 for w in words) >= 3 and sum(w >= 3 for w in words) >= 5
    assert any(TF in expected for _, expected in QUERIES)
