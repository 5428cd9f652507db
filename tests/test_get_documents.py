"""The query layer's contract: cache first, only misses upstream, request order, stale-if-error."""

from __future__ import annotations

import pytest

from mirror.errors import ConfigError, NotCached, NotFound, ProtocolError, Unavailable
from mirror.names import uri_of
from mirror.policy import Mode
from tests.conftest import stored
from tests.emulator import Fault

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = [pytest.mark.both_backends, pytest.mark.shared_emulator]

BATCH = "/v1/documents:batchGet"
TF = [
    "documents/www.tensorflow.org/hub/caching",
    "documents/www.tensorflow.org/hub/installation",
    "documents/www.tensorflow.org/guide/keras",
]


def test_first_get_fetches_then_repeat_is_served_from_cache_with_zero_requests(mirror, emulator):
    first = mirror.get_documents(TF)
    assert [d.name for d in first.documents] == TF
    assert {s.source for s in first.served} == {"upstream"}
    assert emulator.count(BATCH) == 1
    emulator.reset()
    again = mirror.get_documents(TF)
    assert emulator.count() == 0
    assert {s.source for s in again.served} == {"cache"}
    assert again.documents == first.documents
    assert again.documents[0].content.startswith("#") or again.documents[0].content


def test_mixed_batch_fetches_only_the_misses_and_keeps_request_order(mirror, emulator):
    mirror.get_documents(TF[:1])
    emulator.reset()
    wanted = [TF[2], TF[0], TF[1]]
    result = mirror.get_documents(wanted)
    assert [d.name for d in result.documents] == wanted
    (call,) = [r for r in emulator.requests if r.path == BATCH]
    assert call.query["names"] == [TF[2], TF[1]]
    assert [s.source for s in result.served] == ["upstream", "cache", "upstream"]


def test_pasted_forms_are_normalised_before_lookup(mirror, emulator):
    mirror.get_documents(TF[:1])
    emulator.reset()
    result = mirror.get_documents([uri_of(TF[0]) + "/#top", TF[0][len("documents/") :]])
    assert [d.name for d in result.documents] == [TF[0], TF[0]]
    assert emulator.count() == 0


def test_more_than_twenty_names_are_split_into_batches_by_fetch(mirror, emulator):
    names = [d["name"] for d in emulator_docs(emulator)][:45]
    report = mirror.fetch(names)
    assert report.fetched == 45 and not report.missing and report.error is None
    calls = [r for r in emulator.requests if r.path == BATCH]
    # Batches go out together (fetch keeps several in flight), so in any order.
    assert sorted(len(c.query["names"]) for c in calls) == [5, 20, 20]
    emulator.reset()
    assert mirror.fetch(names).already_cached == 45
    assert emulator.count() == 0


def test_get_documents_refuses_more_than_twenty(mirror, emulator):
    with pytest.raises(Exception, match="at most 20"):
        mirror.get_documents(TF * 7)
    assert emulator.count() == 0


@pytest.mark.parametrize("names_document", [True, False])
def test_one_missing_name_is_reported_and_the_others_cached(mirror, emulator, names_document):
    emulator.batch_404_names_document = names_document
    ghost = "documents/www.tensorflow.org/no/such/page"
    wanted = [TF[0], ghost, TF[1], TF[2]]
    with pytest.raises(NotFound) as caught:
        mirror.get_documents(wanted)
    assert caught.value.names == [ghost]
    assert caught.value.exit_code == 3
    calls = emulator.count(BATCH)
    assert calls <= 6  # bisected or named, never one call per name plus retries
    emulator.reset()
    assert [s.source for s in mirror.get_documents([TF[0], TF[1], TF[2]]).served] == ["cache"] * 3
    assert emulator.count() == 0


def test_429_and_503_are_retried_then_succeed(mirror, emulator):
    emulator.inject(Fault(kind="status", status=429, retry_after="1"), times=1, path=BATCH)
    emulator.inject(Fault(kind="status", status=503), times=1, path=BATCH)
    result = mirror.get_documents(TF[:2])
    assert [d.name for d in result.documents] == TF[:2]
    assert emulator.count(BATCH) == 3


def test_retries_give_up_with_a_clear_error_and_store_nothing(make_mirror, emulator):
    from mirror.upstream.retry import RetryPolicy

    mirror = make_mirror(retry=RetryPolicy(max_attempts=3, sleep=lambda _s: None))
    emulator.inject(Fault(kind="status", status=503), times=-1, path=BATCH)
    with pytest.raises(Unavailable) as caught:
        mirror.get_documents(TF[:1])
    assert "3 attempt" in str(caught.value)
    assert emulator.count(BATCH) == 3
    assert stored(mirror, TF[:1]) == {}


@pytest.mark.serial
def test_retries_stop_at_the_overall_deadline(make_mirror, emulator):
    import time

    from mirror.upstream.retry import RetryPolicy

    policy = RetryPolicy(
        max_attempts=50, deadline=1.0, unavailable_initial=0.01, sleep=lambda _s: None
    )
    mirror = make_mirror(retry=policy)
    emulator.inject(Fault(kind="status", status=503, seconds=0.3), times=-1, path=BATCH)
    start = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        mirror.get_documents(TF[:1])
    # The last attempt may start just before the deadline and take its 0.3 s; 50 attempts
    # would take 15 s. The margin is for a loaded machine (CI measured 1.76 s beside a bench).
    assert time.monotonic() - start < 3.0
    assert 2 <= emulator.count(BATCH) <= 4
    assert "deadline" in str(caught.value) or "attempt" in str(caught.value)


@pytest.mark.parametrize("kind", ["truncate", "bad_json", "wrong_shape"])
def test_a_truncated_or_malformed_body_stores_nothing(make_mirror, emulator, kind):
    from mirror.upstream.retry import RetryPolicy

    mirror = make_mirror(retry=RetryPolicy(max_attempts=2, sleep=lambda _s: None))
    emulator.inject(Fault(kind=kind), times=-1, path=BATCH)
    with pytest.raises((ProtocolError, Unavailable)):
        mirror.get_documents(TF)
    assert stored(mirror, TF) == {}
    assert mirror.stats().documents == 0


def test_offline_never_makes_a_request_and_names_what_is_missing(make_mirror, emulator):
    online = make_mirror()
    online.get_documents(TF[:1])
    emulator.reset()
    offline = make_mirror(offline=True)
    assert offline.get_documents(TF[:1]).served[0].source == "cache"
    with pytest.raises(NotCached) as caught:
        offline.get_documents(TF)
    assert caught.value.names == TF[1:]
    assert "dk-mirror fetch" in str(caught.value)
    assert caught.value.exit_code == 4
    assert emulator.count() == 0


def test_offline_serves_old_copies_and_says_so(make_mirror, emulator):
    clock = [1000.0]
    online = make_mirror()
    online.clock = lambda: clock[0]
    online.get_documents(TF[:1])
    offline = make_mirror(offline=True, max_age=10.0)
    offline.clock = lambda: clock[0] + 100
    result = offline.get_documents(TF[:1])
    assert result.served[0].source == "stale" and result.warnings
    assert emulator.count(BATCH) == 1


def test_stale_if_error_serves_the_old_copy_when_upstream_fails(make_mirror, emulator):
    from mirror.upstream.retry import RetryPolicy

    mirror = make_mirror(max_age=60.0, retry=RetryPolicy(max_attempts=2, sleep=lambda _s: None))
    now = [1000.0]
    mirror.clock = lambda: now[0]
    mirror.get_documents(TF[:2])
    now[0] += 3600  # both copies are now older than max_age
    emulator.inject(Fault(kind="status", status=503), times=-1, path=BATCH)
    result = mirror.get_documents(TF[:2])
    assert [s.source for s in result.served] == ["stale", "stale"]
    assert "upstream failed" in result.warnings[0]
    # A name with no copy at all cannot be served stale: the error surfaces.
    with pytest.raises(Unavailable):
        mirror.get_documents([TF[0], TF[2]])


def test_max_age_and_refresh_refetch(make_mirror, emulator):
    mirror = make_mirror()
    now = [1000.0]
    mirror.clock = lambda: now[0]
    mirror.get_documents(TF[:1])
    now[0] += 100
    assert mirror.get_documents(TF[:1], Mode(max_age=500)).served[0].source == "cache"
    assert mirror.get_documents(TF[:1], Mode(max_age=50)).served[0].source == "upstream"
    assert mirror.get_documents(TF[:1], Mode(refresh=True)).served[0].source == "upstream"
    assert emulator.count(BATCH) == 3


def test_changed_upstream_document_is_written_through_on_refresh(mirror, emulator):
    mirror.get_documents(TF[:1])
    doc = dict(next(d for d in emulator_docs(emulator) if d["name"] == TF[0]))
    doc["content"] = "# Changed\n\nnew text\n"
    emulator.put(doc)
    assert mirror.get_documents(TF[:1]).documents[0].content != doc["content"]
    refreshed = mirror.get_documents(TF[:1], Mode(refresh=True)).documents[0]
    assert refreshed.content == doc["content"]
    assert stored(mirror, TF[:1])[TF[0]].document.content == doc["content"]


def test_google_upstream_without_key_is_refused_before_any_network(db_url):
    from mirror.config import Settings
    from mirror.service import Mirror

    with Mirror(Settings(db_url=db_url)) as mirror, pytest.raises(ConfigError) as caught:
        mirror.get_documents(TF[:1])
    assert "DEVELOPER_KNOWLEDGE_API_KEY" in str(caught.value)


def test_mcp_transport_serves_the_same_documents(make_mirror, emulator, another_db_url):
    rest = make_mirror().get_documents(TF[:2]).documents
    mcp = make_mirror(transport="mcp", db_url=another_db_url())
    via_mcp = mcp.get_documents(TF[:2]).documents
    assert [d.content for d in via_mcp] == [d.content for d in rest]
    assert [d.data_source for d in via_mcp] == ["www.tensorflow.org"] * 2
    assert emulator.count(tool="get_documents") == 1


def emulator_docs(emulator):
    """The documents the emulator serves, in a stable order."""
    from tests.emulator_fixtures import corpus_documents

    return corpus_documents("tensorflow.org") + corpus_documents("developer.chrome.com-en")[:200]
