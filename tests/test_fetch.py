"""Mirror.fetch under faults: failed batches do not stop the run, and nothing done is lost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirror.config import Settings
from mirror.errors import AuthError, ProtocolError, Unavailable
from mirror.models import Document
from mirror.service import Mirror, documents
from mirror.service.documents import FETCH_STOP_AFTER
from mirror.upstream.retry import RetryPolicy
from tests.conftest import stored
from tests.emulator import Emulator, Fault
from tests.emulator_fixtures import synthetic_documents
from tests.fakes import FakeTime

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

DOCS = synthetic_documents(100)
NAMES = [d["name"] for d in DOCS]


@pytest.fixture(params=["rest", "mcp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def upstream() -> Iterator[Emulator]:
    """An emulator holding the 100 synthetic documents."""
    with Emulator(DOCS) as running:
        yield running


@pytest.fixture
def fetcher(db_url: str, upstream: Emulator, transport: str) -> Iterator[Mirror]:
    """A Mirror on the test's store in front of `upstream`; waits are recorded, never slept."""
    clock = FakeTime()
    settings = Settings(
        db_url=db_url, upstream=upstream.base_url, transport=transport, api_key="test-key"
    )
    mirror = Mirror(settings, retry=RetryPolicy(sleep=clock.sleep, clock=clock.clock))
    yield mirror
    mirror.close()


def _calls(emulator: Emulator) -> int:
    return sum(1 for r in emulator.requests if r.tool == "get_documents" or "batchGet" in r.path)


def _stored(mirror: Mirror) -> set[str]:
    return {s.name for s in mirror.list_documents()}


def test_a_batch_that_keeps_failing_does_not_stop_the_others(
    fetcher: Mirror, upstream: Emulator
) -> None:
    bad = NAMES[20:40]  # the second batch of five
    upstream.inject(Fault("status", status=503), times=-1, name=bad[3])
    report = fetcher.fetch(NAMES)
    assert report.failed == bad and report.fetched == 80 and report.missing == []
    assert isinstance(report.error, Unavailable) and "gave up after 5 attempt(s)" in str(
        report.error
    )
    assert _stored(fetcher) == set(NAMES) - set(bad)
    # Five batches once, then the failed one once more at the end, five attempts each time.
    assert _calls(upstream) == 4 + 5 + 5
    assert report.to_json()["failed"] == bad and report.to_json()["error"]

    upstream.reset()  # upstream recovers: the next run asks only for what is missing
    again = fetcher.fetch(NAMES)
    assert again.already_cached == 80 and again.fetched == 20 and again.failed == []
    assert _calls(upstream) == 1 and _stored(fetcher) == set(NAMES)


def test_a_batch_that_failed_is_tried_again_at_the_end_of_the_run(
    fetcher: Mirror, upstream: Emulator
) -> None:
    # Exactly one batch's five attempts are broken bodies; its second chance succeeds.
    upstream.inject(Fault("bad_json"), times=5)
    report = fetcher.fetch(NAMES)
    assert report.fetched == 100 and report.failed == [] and report.error is None
    assert _calls(upstream) == 5 + 5
    assert _stored(fetcher) == set(NAMES)


def test_malformed_json_fails_its_batch_without_retries_and_the_run_goes_on(
    fetcher: Mirror, upstream: Emulator
) -> None:
    upstream.inject(Fault("wrong_shape"), times=-1, name=NAMES[0])
    report = fetcher.fetch(NAMES)
    assert report.failed == NAMES[:20] and report.fetched == 80
    assert isinstance(report.error, ProtocolError)
    assert _calls(upstream) == 1 + 4 + 1  # no retries: the shape will not improve


def test_a_run_stops_when_upstream_is_down_and_says_so(
    fetcher: Mirror, upstream: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One batch at a time, so "in a row" is the order they were sent in.
    monkeypatch.setattr(documents, "FETCH_CONCURRENCY", 1)
    upstream.inject(Fault("status", status=503), times=-1)
    report = fetcher.fetch(NAMES)
    assert report.failed == NAMES and report.fetched == 0
    assert report.stopped and f"{FETCH_STOP_AFTER} batches in a row failed" in report.stopped
    assert _calls(upstream) == FETCH_STOP_AFTER * 5
    assert _stored(fetcher) == set()


def test_a_refused_key_stops_the_run_at_once(db_url: str, upstream: Emulator) -> None:
    settings = Settings(db_url=db_url, upstream=upstream.base_url, api_key="wrong-key")
    with Mirror(settings, retry=RetryPolicy(sleep=lambda _s: None)) as mirror:
        report = mirror.fetch(NAMES)
    assert isinstance(report.error, AuthError) and report.failed == NAMES
    # Only the batches already in flight when the first refusal came back were sent.
    assert report.stopped and _calls(upstream) <= documents.FETCH_CONCURRENCY


def test_a_host_that_does_not_resolve_stops_the_run_without_retries(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One batch at a time: with 5 batches and 4 in flight, all would have started already.
    monkeypatch.setattr(documents, "FETCH_CONCURRENCY", 1)
    clock = FakeTime()
    settings = Settings(db_url=db_url, upstream="http://dk-mirror-test.invalid", api_key="k")
    with Mirror(settings, retry=RetryPolicy(sleep=clock.sleep, clock=clock.clock)) as mirror:
        report = mirror.fetch(NAMES)
    assert report.failed == NAMES and report.stopped and clock.slept == []
    assert report.error is not None and "dk-mirror-test.invalid" in report.error.message


@pytest.mark.parametrize(
    ("transport", "framing", "sse"),
    [("rest", "exact", False), ("rest", "short", False), ("mcp", "exact", False),
     ("mcp", "exact", True)],
    ids=["rest-exact", "rest-short", "mcp-exact", "mcp-sse-exact"],
)  # fmt: skip
def test_one_run_stores_every_document_byte_exact_with_30_percent_truncated_bodies(
    db_url: str, transport: str, framing: str, sse: bool
) -> None:
    docs = synthetic_documents(1000)
    with Emulator(docs, seed=20260916) as emu:
        emu.mcp_sse = sse
        emu.inject(Fault("truncate", framing=framing), times=-1, rate=0.3)
        settings = Settings(
            db_url=db_url,
            upstream=emu.base_url,
            transport=transport,
            api_key="test-key",
            get_per_minute=100_000,  # the emulator has no quota; pacing is tested elsewhere
        )
        with Mirror(settings, retry=RetryPolicy(sleep=lambda _s: None)) as mirror:
            report = mirror.fetch([d["name"] for d in docs])
            held = stored(mirror, [d["name"] for d in docs])
        broken = _calls(emu) - 50
    assert report.failed == [] and report.fetched == 1000
    assert broken > 0.2 * 50  # the faults really happened (about 21 of ~71 calls)
    for want in docs:
        got: Document = held[want["name"]].document
        assert got.content is not None
        assert got.content.encode() == want["content"].encode()
        assert (got.title, got.description, got.uri) == (
            want["title"],
            want["description"],
            "https://" + want["name"].removeprefix("documents/"),
        )
