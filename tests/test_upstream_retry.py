"""Retries: which failures are retried, how long we wait, and how we give up (no real sleeps)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator

import httpx
import pytest

from mirror.config import Settings
from mirror.errors import AuthError, ProtocolError, QuotaExceeded, Unavailable
from mirror.upstream import Upstream
from mirror.upstream.factory import build
from mirror.upstream.retry import (
    RetryPolicy,
    Transient,
    backoff_delay,
    call_with_retry,
    parse_retry_after,
    retry_delay,
)
from tests.emulator import Emulator, Fault
from tests.fakes import FakeTime

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

NAMES = ["documents/www.tensorflow.org/README", "documents/www.tensorflow.org/about/bib"]


# -- the pure parts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry_number", "unit_random", "expected"),
    [
        (0, 0.0, 1.0),
        (0, 0.5, 1.5),
        (1, 0.0, 2.0),
        (3, 1.0, 9.0),
        (4, 0.0, 16.0),
        (5, 0.0, 32.0),
        (5, 0.9, 32.0),  # capped at max_wait
        (9, 0.3, 32.0),
    ],
)
def test_backoff_delay(retry_number: int, unit_random: float, expected: float) -> None:
    assert backoff_delay(retry_number, RetryPolicy(), unit_random) == pytest.approx(expected)


def _quota(retry_after: float | None = None) -> Transient:
    return Transient(QuotaExceeded("batchGet: HTTP 429", status=429), retry_after)


_UNAVAILABLE = Transient(Unavailable("batchGet: HTTP 503", status=503))
_CUT = Transient(ProtocolError("batchGet: HTTP 200 but the body is not JSON"))
_DROPPED = httpx.RemoteProtocolError("Server disconnected without sending a response.")


@pytest.mark.parametrize(
    ("retry_number", "exc", "unit_random", "expected"),
    [
        # 429 without Retry-After: the error-handling page's formula (initial * 2^n + jitter).
        (0, _quota(), 0.5, 1.5),
        (2, _quota(), 0.0, 4.0),
        # 429 with Retry-After: exactly that, whatever the draw.
        (0, _quota(retry_after=7.0), 0.9, 7.0),
        # 5xx and timeouts: the API's gRPC config, full jitter over 1 s * 1.3^n, at most 10 s.
        (0, _UNAVAILABLE, 1.0, 1.0),
        (0, _UNAVAILABLE, 0.25, 0.25),
        (3, _UNAVAILABLE, 1.0, 1.3**3),
        (20, _UNAVAILABLE, 1.0, 10.0),
        (1, httpx.ReadTimeout("slow"), 0.5, 0.65),
        # Cut off (a dropped connection, a 200 that is not JSON): at once, then as a 5xx.
        (0, _CUT, 0.9, 0.0),
        (0, _DROPPED, 0.9, 0.0),
        (1, _CUT, 1.0, 1.0),
        (2, _DROPPED, 1.0, 1.3),
    ],
)
def test_retry_delay_by_kind_of_failure(
    retry_number: int, exc: BaseException, unit_random: float, expected: float
) -> None:
    assert retry_delay(retry_number, exc, RetryPolicy(), unit_random) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("7", 7.0),
        (" 2.5 ", 2.5),
        ("-3", 0.0),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # 10 s after the `now` below
        ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),  # already past
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert parse_retry_after(header, now) == expected


def test_transient_failures_are_retried_until_success() -> None:
    t = FakeTime()
    outcomes: Iterator[object] = iter([_quota(), httpx.ReadTimeout("slow"), "ok"])

    def attempt(_left: float) -> str:
        outcome = next(outcomes)
        if isinstance(outcome, BaseException):
            raise outcome
        return str(outcome)

    policy = RetryPolicy(jitter=0.0, sleep=t.sleep, clock=t.clock, random=lambda: 0.5)
    assert call_with_retry(policy, "fetching", attempt) == "ok"
    # A 429: 1 s (initial * 2^0); then a timeout, as a 5xx: half (the draw) of 1 s * 1.3.
    assert t.slept == [1.0, pytest.approx(0.65)]


def test_non_transient_errors_are_not_retried() -> None:
    calls = []

    def attempt(_left: float) -> str:
        calls.append(1)
        raise AuthError("bad key", status=400)

    with pytest.raises(AuthError):
        call_with_retry(RetryPolicy(sleep=lambda _s: None), "fetching", attempt)
    assert len(calls) == 1


def test_gives_up_after_max_attempts_with_a_clear_message() -> None:
    t = FakeTime()

    def attempt(_left: float) -> str:
        raise _quota()

    policy = RetryPolicy(max_attempts=3, jitter=0.0, sleep=t.sleep, clock=t.clock)
    with pytest.raises(QuotaExceeded) as info:
        call_with_retry(policy, "batchGet of 2 document(s)", attempt)
    text = str(info.value)
    assert "batchGet of 2 document(s): gave up after 3 attempt(s) over 3.0 s" in text
    assert "HTTP 429" in text
    assert "DK_MIRROR_GET_PER_MINUTE" in text and "100 calls/min" in text
    assert info.value.status == 429
    assert t.slept == [1.0, 2.0]


def test_retry_after_is_honoured_but_never_past_the_deadline() -> None:
    t = FakeTime()

    def attempt(_left: float) -> str:
        raise _quota(retry_after=25.0)

    policy = RetryPolicy(deadline=60.0, sleep=t.sleep, clock=t.clock)
    with pytest.raises(QuotaExceeded) as info:
        call_with_retry(policy, "fetching", attempt)
    # 25 s, 25 s, then a third 25 s wait would end at 75 s > 60 s: give up at 50 s instead.
    assert t.slept == [25.0, 25.0]
    assert "gave up after 3 attempt(s) over 50.0 s" in str(info.value)
    assert "60 s deadline" in str(info.value)


def test_a_retry_after_beyond_the_deadline_gives_up_at_once() -> None:
    t = FakeTime()

    def attempt(_left: float) -> str:
        raise _quota(retry_after=3600.0)

    with pytest.raises(QuotaExceeded):
        call_with_retry(RetryPolicy(sleep=t.sleep, clock=t.clock), "fetching", attempt)
    assert t.slept == []


def test_attempts_are_told_how_much_time_is_left() -> None:
    t = FakeTime()
    seen: list[float] = []

    def attempt(left: float) -> str:
        seen.append(left)
        t.now += 4.0  # the attempt itself takes time
        if len(seen) < 3:
            raise httpx.ConnectError("refused")
        return "ok"

    policy = RetryPolicy(deadline=20.0, sleep=t.sleep, clock=t.clock, random=lambda: 1.0)
    assert call_with_retry(policy, "fetching", attempt) == "ok"
    # Refused connections wait as a 5xx does (1 s, then 1.3 s): 20; 20-4-1; 20-4-1-4-1.3
    assert seen == pytest.approx([20.0, 15.0, 9.7])


def test_transport_errors_give_up_as_unavailable() -> None:
    def attempt(_left: float) -> str:
        raise httpx.RemoteProtocolError("peer closed connection")

    with pytest.raises(Unavailable) as info:
        call_with_retry(RetryPolicy(sleep=lambda _s: None), "fetching", attempt)
    assert "gave up after 5 attempt(s)" in str(info.value)
    assert "RemoteProtocolError: peer closed connection" in str(info.value)
    assert "--offline" in str(info.value)


# -- over real HTTP, against the emulator ---------------------------------------------------


@pytest.fixture(params=["rest", "mcp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _open(emulator: Emulator, transport: str, policy: RetryPolicy) -> Upstream:
    settings = Settings(
        db_url="sqlite://", upstream=emulator.base_url, transport=transport, api_key="test-key"
    )
    return build(settings, retry=policy)


def _calls(emulator: Emulator, transport: str) -> int:
    return emulator.count(path="/mcp" if transport == "mcp" else "/v1/documents:batchGet")


@pytest.mark.parametrize(("status", "retry_after"), [(429, "3"), (503, None), (500, None)])
def test_retryable_statuses_are_retried_then_succeed(
    emulator: Emulator, transport: str, status: int, retry_after: str | None
) -> None:
    t = FakeTime()
    emulator.inject(Fault(kind="status", status=status, retry_after=retry_after), times=2)
    policy = RetryPolicy(jitter=0.0, sleep=t.sleep, clock=t.clock, random=lambda: 1.0)
    upstream = _open(emulator, transport, policy)
    try:
        docs = upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert [d.name for d in docs] == NAMES
    assert _calls(emulator, transport) == 3
    # Retry-After when given; a 5xx waits gRPC's full-jitter bound, drawn here at its top.
    assert t.slept == ([3.0, 3.0] if retry_after else [1.0, pytest.approx(1.3)])


def test_retry_after_as_an_http_date(emulator: Emulator, transport: str) -> None:
    t = FakeTime()
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    emulator.inject(Fault(kind="status", status=429, retry_after=when), times=1)
    upstream = _open(emulator, transport, RetryPolicy(sleep=t.sleep, clock=t.clock))
    try:
        upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert len(t.slept) == 1 and 3.0 <= t.slept[0] <= 6.0


@pytest.mark.parametrize("kind", ["drop", "truncate"])
def test_broken_connections_are_retried(emulator: Emulator, transport: str, kind: str) -> None:
    emulator.inject(Fault(kind=kind), times=2)
    upstream = _open(emulator, transport, RetryPolicy(sleep=lambda _s: None))
    try:
        docs = upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert [d.name for d in docs] == NAMES
    assert _calls(emulator, transport) == 3


@pytest.mark.parametrize(("status", "error"), [(429, QuotaExceeded), (503, Unavailable)])
def test_persistent_failures_give_up_after_five_attempts(
    emulator: Emulator, transport: str, status: int, error: type[Exception]
) -> None:
    emulator.inject(Fault(kind="status", status=status), times=-1)
    upstream = _open(emulator, transport, RetryPolicy(sleep=lambda _s: None))
    try:
        with pytest.raises(error) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert _calls(emulator, transport) == 5
    text = str(info.value)
    assert "gave up after 5 attempt(s)" in text and f"HTTP {status}" in text
    assert "2 document(s)" in text and emulator.base_url in text


@pytest.mark.serial
def test_slow_answers_give_up_within_the_deadline(emulator: Emulator, transport: str) -> None:
    # Each answer takes 0.3 s of real time and is a 503; the whole call may take 1 s.
    emulator.inject(Fault(kind="status", status=503, seconds=0.3), times=-1)
    policy = RetryPolicy(deadline=1.0, unavailable_initial=0.01, jitter=0.0, sleep=lambda _s: None)
    upstream = _open(emulator, transport, policy)
    started = time.monotonic()
    try:
        with pytest.raises(Unavailable) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert time.monotonic() - started < 1.6
    assert 2 <= _calls(emulator, transport) <= 4
    assert "1 s deadline" in str(info.value)


@pytest.mark.serial
def test_a_hanging_upstream_times_out_at_the_deadline(emulator: Emulator, transport: str) -> None:
    # The answer would take 3 s; the read timeout is cut down to the 0.5 s deadline.
    emulator.inject(Fault(kind="latency", seconds=3.0), times=1)
    upstream = _open(emulator, transport, RetryPolicy(deadline=0.5, sleep=lambda _s: None))
    started = time.monotonic()
    try:
        with pytest.raises(Unavailable) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert time.monotonic() - started < 1.5
    assert "timed out" in str(info.value)
    assert _calls(emulator, transport) == 1


@pytest.mark.parametrize(
    ("transport", "sse"),
    [("rest", False), ("mcp", False), ("mcp", True)],
    ids=["rest", "mcp", "mcp-sse"],
)
@pytest.mark.parametrize(
    "fault",
    [Fault("bad_json"), Fault("truncate", framing="exact"), Fault("truncate")],
    ids=["bad_json", "truncate-exact", "truncate-short"],
)
def test_bodies_that_are_not_the_promised_json_are_retried(
    emulator: Emulator, transport: str, fault: Fault, sse: bool
) -> None:
    emulator.mcp_sse = sse  # an SSE event cut mid-stream, or not JSON
    emulator.inject(fault, times=2)
    upstream = _open(emulator, transport, RetryPolicy(sleep=lambda _s: None))
    try:
        docs = upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert [d.name for d in docs] == NAMES
    assert _calls(emulator, transport) == 3


def test_a_body_that_stays_broken_gives_up_within_the_attempt_budget(
    emulator: Emulator, transport: str
) -> None:
    t = FakeTime()
    emulator.inject(Fault("truncate", framing="exact"), times=-1)
    policy = RetryPolicy(jitter=0.0, sleep=t.sleep, clock=t.clock, random=lambda: 1.0)
    upstream = _open(emulator, transport, policy)
    try:
        with pytest.raises(ProtocolError) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    # A cut answer is retried at once, then with the 5xx backoff (1 s x 1.3^n).
    assert _calls(emulator, transport) == 5
    assert t.slept == pytest.approx([0.0, 1.0, 1.3, 1.69])
    text = str(info.value)
    assert "gave up after 5 attempt(s)" in text and "not JSON" in text
    assert emulator.base_url in text and "test-key" not in text


def test_well_formed_json_of_the_wrong_shape_is_not_retried(
    emulator: Emulator, transport: str
) -> None:
    emulator.inject(Fault(kind="wrong_shape"), times=1)
    upstream = _open(emulator, transport, RetryPolicy(sleep=lambda _s: None))
    try:
        with pytest.raises(ProtocolError) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert _calls(emulator, transport) == 1
    assert emulator.base_url in str(info.value)


def test_a_host_that_does_not_resolve_fails_at_once(transport: str) -> None:
    t = FakeTime()
    settings = Settings(
        db_url="sqlite://",
        upstream="http://dk-mirror-test.invalid",
        transport=transport,
        api_key="test-key",
    )
    upstream = build(settings, retry=RetryPolicy(sleep=t.sleep, clock=t.clock))
    try:
        with pytest.raises(Unavailable) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert t.slept == []  # not retried: a name that does not resolve will not start to
    text = str(info.value)
    assert "dk-mirror-test.invalid" in text and "DNS" in text
    assert "DK_MIRROR_UPSTREAM" in (info.value.hint or "")
    assert "test-key" not in text


@pytest.mark.parametrize("status", [400, 401, 403, 404, 502])
def test_other_statuses_are_not_retried(emulator: Emulator, transport: str, status: int) -> None:
    emulator.inject(Fault(kind="status", status=status), times=1)
    upstream = _open(emulator, transport, RetryPolicy(sleep=lambda _s: None))
    try:
        with pytest.raises(Exception) as info:
            upstream.batch_get(NAMES)
    finally:
        upstream.close()
    assert getattr(info.value, "status", None) == status
    assert _calls(emulator, transport) == 1
