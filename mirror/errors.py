"""One exception tree for everything dk-mirror reports to a user.

    MirrorError                    base; `.hint` says what to do next
    ├── InvalidInput               bad names, options or files given by the user (exit 2)
    │   ├── InvalidName            a name that cannot be a document (names.py raises it)
    │   ├── InvalidFilter          search/filter_syntax.py: a filter outside the grammar
    │   ├── SnapshotError          snapshots/format.py: a snapshot unwritable, unreadable, bad
    │   ├── RequirementsError      snapshots/lockfile.py: a dk-mirror.toml it cannot use
    │   ├── LockError              snapshots/lockfile.py: a dk-mirror.lock it cannot use
    │   ├── UnsafePath             snapshots/mdpaths.py: a Markdown path escaping its folder
    │   └── OutputError            files.py: a file asked for that cannot be written (a full
    │                              disk, a read-only folder)
    ├── ConfigError                missing API key, bad URL, unusable settings (exit 1)
    │   ├── MissingApiKey          upstream/factory.py: Google's API and no key to call it
    │   ├── WrongUpstream          upstream/http_errors.py: a 404 for a route, not a document:
    │   │                          the upstream URL looks wrong (never "missing" names)
    │   └── NetworkForbidden       strict offline mode and something tried to go online
    ├── NotCached                  offline and not in the store (exit 4); `.names`
    │   ├── NotServed              serve/calls.py: a miss a read-only server may not fetch
    │   └── NotThen                an as-of read: not in the store then (not yet fetched, or
    │                              its version of then was pruned); `.pruned`
    ├── StoreError                 the local database cannot be used as asked (exit 1)
    │   ├── SchemaError            store revision unknown to this version of dk-mirror
    │   ├── IndexRebuilding        a server's search index is being rebuilt; `.retry_after`
    │   └── WriteConflict          PostgreSQL stopped a write that collided with another
    │                              writer's (deadlock, serialization failure); store/db/
    │                              turns.py retries it, so it escapes only after its retries
    └── UpstreamError              the upstream API failed; `.status`, `.code` (exit 1)
        ├── NotFound               upstream has no such document (exit 3); `.names`
        ├── BadRequest             400 INVALID_ARGUMENT other than an invalid key
        ├── AuthError              401, or 400 "API key not valid"
        ├── PermissionDenied       403: API not enabled, or key restricted to other APIs
        ├── QuotaExceeded          429 RESOURCE_EXHAUSTED after retries
        ├── Unavailable            503/504/5xx, dropped connections, timeouts, after retries
        └── ProtocolError          a body that is not the JSON shape the contract promises

    Transient (upstream/retry.py)  internal to the retry loop: wraps an UpstreamError worth
                                   retrying; never escapes mirror/upstream/
    Damaged                        store/textindex/sqlite/shards.py: tantivy could not read the
                                   index's files; never escapes the store (the index is rebuilt,
                                   or a StoreError says it cannot be)
    FetchInterrupted               service/documents.py: Ctrl-C during `fetch` (a
                                   KeyboardInterrupt) carrying the report of what was saved
    RefreshInterrupted             service/refresh.py: the same for `refresh`
    CrawlInterrupted               service/crawl_reports.py: the same for `crawl`, after the
                                   batches already fetched were committed
    EmbeddingInterrupted           service/semantic.py: Ctrl-C while a write's documents were
                                   embedded, after their commit; says how many wait for a vector
    Stopping                       interrupts.py: a wait (pacing, a retry's backoff) cut short
                                   by Ctrl-C (a KeyboardInterrupt); a worker starts no more calls

Messages say what happened, what was being done, and what to do next. None of them ever
contains the API key: the key travels only in a request header, which no message quotes.
"""

from __future__ import annotations

from collections.abc import Sequence

# google.rpc code names by HTTP status, as Google's JSON error bodies pair them. 502 has no
# code of its own; Google's front ends report it as UNAVAILABLE.
STATUS_BY_HTTP = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class MirrorError(Exception):
    """Base of every error dk-mirror raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class InvalidInput(MirrorError):
    """The user gave something dk-mirror cannot use."""

    exit_code = 2


class OutputError(InvalidInput):
    """A file or folder the user asked for cannot be written there (files.cannot_write)."""


class InvalidName(InvalidInput):
    """A document name that cannot be a Developer Knowledge resource name."""


class ConfigError(MirrorError):
    """Settings that make the request impossible (no key, bad URL, ...)."""


class MissingApiKey(ConfigError):
    """No API key for an upstream that needs one (searches and answers then go local)."""


class WrongUpstream(ConfigError):
    """Upstream has no such route (a 404 that is not the API's answer for a missing document):
    the base URL is wrong, so every call would fail and no name may be taken as missing."""


class NetworkForbidden(ConfigError):
    """Strict offline mode is on and an operation tried to reach the network."""


class StoreError(MirrorError):
    """The local store cannot be opened, read or written as asked."""


class SchemaError(StoreError):
    """The store's schema revision is not one this version understands."""


class IndexRebuilding(StoreError):
    """The search index is being rebuilt from the store (a server says so rather than wait)."""

    def __init__(self, message: str, *, hint: str | None = None, retry_after: int = 5) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after


class WriteConflict(StoreError):
    """PostgreSQL rolled a write back because it collided with another writer's at the same
    moment (SQLSTATE 40P01 deadlock, 40001 serialization failure): worth running again."""


class NotCached(MirrorError):
    """Offline, and these documents are not in the store."""

    exit_code = 4

    def __init__(self, names: Sequence[str], *, hint: str | None = None) -> None:
        self.names = list(names)
        shown = ", ".join(self.names[:10]) + (" ..." if len(self.names) > 10 else "")
        fetch = "dk-mirror fetch " + " ".join(self.names[:3]) + (" ..." if len(names) > 3 else "")
        super().__init__(
            f"{len(self.names)} document(s) not in the local store and offline mode is on: {shown}",
            hint=hint or f"fetch them while online: {fetch}",
        )


class NotThen(NotCached):
    """An as-of read (`--as-of`): these documents were not in the store at that time."""

    def __init__(
        self, names: Sequence[str], *, pruned: Sequence[str] = (), when: str = "that time"
    ) -> None:
        super().__init__(names)
        self.pruned = [n for n in names if n in set(pruned)]
        later = [n for n in self.names if n not in set(self.pruned)]
        parts = []
        if later:
            parts.append(f"{len(later)} not yet fetched then: {_shown(later)}")
        if self.pruned:
            parts.append(
                f"{len(self.pruned)} whose version of then was pruned from the history "
                f"(a newer one is kept, and is not that copy): {_shown(self.pruned)}"
            )
        self.message = f"not in the store as of {when}: " + "; ".join(parts)
        self.args = (self.message,)
        self.hint = "dk-mirror history NAME lists the versions kept and when each was fetched; " + (
            "keep more versions with --keep-versions" if self.pruned else "pick a later date"
        )


def _shown(names: Sequence[str]) -> str:
    return ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")


class UpstreamError(MirrorError):
    """The upstream API answered with an error or not at all."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.code = code


class NotFound(UpstreamError):
    """Upstream has no document by these names."""

    exit_code = 3

    def __init__(self, names: Sequence[str], *, hint: str | None = None) -> None:
        self.names = list(names)
        shown = ", ".join(self.names[:10]) + (" ..." if len(self.names) > 10 else "")
        super().__init__(
            f"not found upstream: {shown}",
            status=404,
            code="NOT_FOUND",
            hint=hint
            or "check the name (documents/{host}/{path}, as in a search result's `parent`)",
        )


class BadRequest(UpstreamError):
    """Upstream refused the request as invalid (400 INVALID_ARGUMENT)."""


class AuthError(UpstreamError):
    """The API key is missing or not valid."""


class PermissionDenied(UpstreamError):
    """The API is not enabled for the key's project, or the key may not call it."""


class QuotaExceeded(UpstreamError):
    """Upstream quota exhausted (429 RESOURCE_EXHAUSTED), or a local quota would be."""


class Unavailable(UpstreamError):
    """Upstream did not answer usefully in time: 5xx, timeouts, dropped connections."""


class ProtocolError(UpstreamError):
    """Upstream's answer is not the shape the API contract promises."""
