"""Retry transient upstream failures: capped backoff with jitter, Retry-After, one deadline."""

from __future__ import annotations

import email.utils
import logging
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception

from .. import interrupts
from ..config import (
    DEFAULT_ANSWERS_PER_DAY,
    DEFAULT_GET_PER_MINUTE,
    DEFAULT_SEARCH_PER_MINUTE,
    ENV_GET_RATE,
    ENV_SEARCH_RATE,
)
from ..errors import ProtocolError, QuotaExceeded, Unavailable, UpstreamError
from .parking import parked_sleep

log = logging.getLogger("mirror.upstream")

T = TypeVar("T")

# RESOURCE_EXHAUSTED, INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED: the codes the error-handling
# page says to retry. Everything else (400/401/403/404, 501, 502 ...) will not get better.
RETRYABLE_STATUSES = frozenset({429, 500, 503, 504})

# Transport failures that a second try can cure. Not LocalProtocolError or UnsupportedProtocol:
# those are our own mistakes and would fail identically.
_TRANSIENT_TRANSPORT: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,  # dropped connection, truncated body
)
# Of those, the ones where the connection broke rather than upstream being slow or away.
_CUT_OFF: tuple[type[Exception], ...] = (
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)

QUOTA_HINT = (
    f"the documented quota for Get and BatchGet together is {DEFAULT_GET_PER_MINUTE} calls/min "
    f"per project; wait a minute and retry, or set {ENV_GET_RATE} to your project's quota "
    "(or lower) so the mirror paces itself under it"
)
SEARCH_QUOTA_HINT = (
    f"the documented quota for SearchDocumentChunks is {DEFAULT_SEARCH_PER_MINUTE} calls/min "
    f"per project; wait a minute and retry, or set {ENV_SEARCH_RATE} to your project's quota "
    "(or lower) so the mirror paces itself under it"
)
ANSWER_QUOTA_HINT = (
    f"the documented AnswerQuery quota is {DEFAULT_ANSWERS_PER_DAY} calls/day per project, so waiting "
    "will not help today; use `dk-mirror search` instead (search has its own quota of "
    f"{DEFAULT_SEARCH_PER_MINUTE} calls/min)"
)
UNAVAILABLE_HINT = (
    "upstream is down, overloaded or unreachable; try again later, or read what is already "
    "mirrored with --offline"
)
BROKEN_BODY_HINT = (
    "upstream (or a proxy in between) keeps sending cut or garbled answers; try again later, "
    "or read what is already mirrored with --offline"
)
DNS_HINT = (
    "check the host in the upstream URL (--upstream / DK_MIRROR_UPSTREAM) for a typo, and that "
    "this machine has a network connection and a working DNS resolver (VPN, proxy); or read "
    "what is already mirrored with --offline"
)


def _sleep(seconds: float) -> None:
    # Cut short by Ctrl-C (interrupts.py), so a worker waiting for its quota slot or its
    # retry does not hold the command's exit. Looked up at call time, so a test that patches
    # mirror.interrupts.sleep is obeyed here too.
    interrupts.sleep(seconds)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try: attempts, overall deadline (seconds) and backoff shape.

    Three kinds of transient failure wait differently (`retry_delay`):
    - 429 RESOURCE_EXHAUSTED: Retry-After when given, else the error-handling page's formula
      min(max_wait, initial * 2^n + jitter): a quota refills on its own clock.
    - 5xx (UNAVAILABLE and kin): the API's own gRPC service config, initialBackoff 1 s,
      backoffMultiplier 1.3, maxBackoff 10 s, with gRPC's full jitter (a wait drawn from
      [0, bound)), so a burst of failed calls does not come back in lockstep.
    - A dropped connection or a 200 cut short or garbled: nothing said upstream is busy, so the
      first retry goes at once (on a new connection); any later one waits as a 5xx does.
    """

    max_attempts: int = 5
    deadline: float = 60.0
    initial: float = 1.0
    max_wait: float = 32.0
    jitter: float = 1.0
    unavailable_initial: float = 1.0
    unavailable_multiplier: float = 1.3
    unavailable_max: float = 10.0
    sleep: Callable[[float], None] = _sleep
    clock: Callable[[], float] = time.monotonic
    # A number in [0, 1) for each jittered wait (tests pin it).
    random: Callable[[], float] = random.random


@dataclass(frozen=True, slots=True)
class Quota:
    """The upstream quota a call draws on: its pacing bucket, the 429 hint, whether to wait."""

    bucket: str | None  # the client-side pacer that spaces these calls; None: not paced
    hint: str
    # False when the quota cannot refill within any retry deadline (a per-day quota):
    # retrying a 429 would only burn the deadline, so it is reported at once.
    wait_for_refill: bool = True


GET_QUOTA = Quota("get", QUOTA_HINT)
SEARCH_QUOTA = Quota("search", SEARCH_QUOTA_HINT)
# Pacing 50/day would mean sleeping for hours; a refused call is reported instead.
ANSWER_QUOTA = Quota(None, ANSWER_QUOTA_HINT, wait_for_refill=False)


class Transient(Exception):
    """An attempt failed in a way worth repeating; carries the mapped error and Retry-After."""

    def __init__(self, error: UpstreamError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


def backoff_delay(retry_number: int, policy: RetryPolicy, unit_random: float) -> float:
    """Seconds before retry `retry_number` (0-based): min(max_wait, initial*2^n + jitter)."""
    return min(policy.max_wait, policy.initial * 2.0**retry_number + policy.jitter * unit_random)


def unavailable_delay(retry_number: int, policy: RetryPolicy, unit_random: float) -> float:
    """Seconds before retry `retry_number` (0-based) of a 5xx: gRPC's full-jitter backoff."""
    bound = policy.unavailable_initial * policy.unavailable_multiplier**retry_number
    return min(policy.unavailable_max, bound) * unit_random


def retry_delay(
    retry_number: int, exc: BaseException | None, policy: RetryPolicy, unit_random: float
) -> float:
    """Seconds to wait before retry `retry_number` (0-based) after `exc` (see RetryPolicy)."""
    if isinstance(exc, Transient) and exc.retry_after is not None:
        return exc.retry_after  # the server knows when its quota refills; believe it
    if is_quota(exc):
        return backoff_delay(retry_number, policy, unit_random)
    if is_cut_off(exc):
        if retry_number == 0:
            return 0.0
        return unavailable_delay(retry_number - 1, policy, unit_random)
    return unavailable_delay(retry_number, policy, unit_random)


def is_cut_off(exc: BaseException | None) -> bool:
    """True for a connection dropped mid-call or an answer cut short or garbled on the way."""
    if isinstance(exc, Transient):
        return isinstance(exc.error, ProtocolError)
    return isinstance(exc, _CUT_OFF)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or HTTP date); None if absent/bad."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT; a naive parse result means the same
        return None
    wall = time.time() if now is None else now
    return max(0.0, when.timestamp() - wall)


def broken_body(what: str, detail: str) -> Transient:
    """A 200 whose body is not the promised JSON (cut short, garbled): worth another try.

    Truncation by a proxy or a dropped stream is as passing as a 503, so it spends the same
    attempt budget and deadline; well-formed JSON of the wrong shape is a ProtocolError instead.
    """
    return Transient(ProtocolError(f"{what}: {detail}"))


def dns_failure(exc: BaseException) -> socket.gaierror | None:
    """The name-resolution error behind a connect failure, if that is what it was."""
    seen: BaseException | None = exc
    for _ in range(10):  # httpx -> httpcore -> socket; bounded in case of a cycle
        if seen is None:
            return None
        if isinstance(seen, socket.gaierror):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def is_transient(exc: BaseException) -> bool:
    """True for failures a retry may cure (429/5xx answers, broken bodies, transport errors)."""
    if isinstance(exc, httpx.ConnectError) and dns_failure(exc) is not None:
        # A host that does not resolve now will not resolve in a second: say so at once.
        return False
    return isinstance(exc, (Transient, *_TRANSIENT_TRANSPORT))


def is_quota(exc: BaseException | None) -> bool:
    """True for a 429 (RESOURCE_EXHAUSTED) answer, as an attempt raises it to be retried."""
    return isinstance(exc, Transient) and isinstance(exc.error, QuotaExceeded)


def call_with_retry(
    policy: RetryPolicy,
    what: str,
    attempt: Callable[[float], T],
    quota: Quota = GET_QUOTA,
    on_retry: Callable[[BaseException | None, float], None] | None = None,
    paused: Callable[[], float] | None = None,
) -> T:
    """Run `attempt(seconds_left)` until it succeeds, fails for good, or the policy gives up
    (`on_retry(error, seconds)`: told before each wait for a retry, e.g. to count it;
    `paused()`: seconds spent so far that the deadline does not count, e.g. quota pacing)."""
    start = policy.clock()

    def worth_retrying(exc: BaseException) -> bool:
        return is_transient(exc) and (quota.wait_for_refill or not is_quota(exc))

    def elapsed() -> float:
        return policy.clock() - start - (paused() if paused else 0.0)

    def one() -> T:
        # The attempt bounds its own timeouts by this, so one slow answer cannot
        # carry us past the deadline.
        return attempt(max(policy.deadline - elapsed(), 0.001))

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return retry_delay(state.attempt_number - 1, exc, policy, policy.random())

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= policy.max_attempts:
            return True
        # Give up now rather than sleep into a wait that ends past the deadline.
        return elapsed() + state.upcoming_sleep >= policy.deadline

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.debug(
            "%s: attempt %d failed (%s); retrying in %.2f s",
            what,
            state.attempt_number,
            _reason(exc),
            state.upcoming_sleep,
        )
        if on_retry is not None:
            on_retry(exc, state.upcoming_sleep)

    def give_up(state: RetryCallState) -> T:
        exc = state.outcome.exception() if state.outcome else None
        raise _gave_up(policy, what, state, elapsed(), exc, quota) from exc

    def sleep(seconds: float) -> None:
        # A caller running several calls at once may let others go meanwhile (parking.py).
        parked_sleep(policy.sleep, seconds)

    retrying = Retrying(
        sleep=sleep,
        stop=stop,
        wait=wait,
        retry=retry_if_exception(worth_retrying),
        before_sleep=before_sleep,
        retry_error_callback=give_up,
    )
    try:
        return retrying(one)
    except Transient as exc:
        # Only a quota error not worth waiting for gets here: report it on the first refusal.
        err = exc.error
        raise QuotaExceeded(err.message, status=err.status, code=err.code, hint=quota.hint) from exc
    except httpx.HTTPError as exc:
        # Not transient (e.g. an unsupported URL scheme): still report it in our own tree.
        if (lookup := dns_failure(exc)) is not None:
            raise Unavailable(
                f"{what}: cannot resolve the host {_host(exc)!r} (DNS lookup failed: "
                f"{lookup.strerror or lookup})",
                hint=DNS_HINT,
            ) from exc
        raise Unavailable(f"{what}: {_reason(exc)}", hint=UNAVAILABLE_HINT) from exc


def _host(exc: httpx.HTTPError) -> str:
    try:
        return exc.request.url.host
    except RuntimeError:  # an error raised without its request
        return "(unknown host)"


def _reason(exc: BaseException | None) -> str:
    if isinstance(exc, Transient):
        return exc.error.message
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    if exc is None:
        return "unknown failure"
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


def _gave_up(
    policy: RetryPolicy,
    what: str,
    state: RetryCallState,
    elapsed: float,
    exc: BaseException | None,
    quota: Quota,
) -> UpstreamError:
    attempts = state.attempt_number
    if attempts >= policy.max_attempts:
        why = f"the limit of {policy.max_attempts} attempts"
    else:
        why = (
            f"waiting another {state.upcoming_sleep:.1f} s would pass the "
            f"{policy.deadline:g} s deadline"
        )
    message = (
        f"{what}: gave up after {attempts} attempt(s) over {elapsed:.1f} s ({why}); "
        f"last error: {_reason(exc)}"
    )
    if isinstance(exc, Transient):
        err = exc.error
        if isinstance(err, QuotaExceeded):
            return QuotaExceeded(message, status=err.status, code=err.code, hint=quota.hint)
        if isinstance(err, ProtocolError):
            return ProtocolError(message, status=err.status, code=err.code, hint=BROKEN_BODY_HINT)
        return Unavailable(message, status=err.status, code=err.code, hint=UNAVAILABLE_HINT)
    return Unavailable(message, hint=UNAVAILABLE_HINT)
