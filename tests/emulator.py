"""A local stand-in for the Developer Knowledge API, for tests of the project's HTTP clients.

`Emulator` is a real HTTP/1.1 server on 127.0.0.1 (an ephemeral port) that speaks REST v1 and
v1alpha plus the MCP streamable-HTTP endpoint (``emulator_mcp.py``), records every request, and
misbehaves on demand (`inject` a `Fault`, or flip a switch). Standard library only, so it never
depends on the code it tests. Contract: shared/reference/developer-knowledge-api.md.

This module holds the `Emulator` itself (lifecycle, corpus, faults, routing, auth, quotas and
documents); search and answers are in ``emulator_search.py``, the HTTP server, errors and
request records in ``emulator_http.py``. Import everything from here.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

if __package__:
    from . import emulator_http
    from .emulator_http import PROJECT, SERVICE, STATUS, ApiError, Recorded
    from .emulator_mcp import McpSurface, Reply
    from .emulator_search import Hit, SearchSurface, parse_time
else:  # loaded as a top-level module (pytest's rootdir-relative import of tests/)
    import emulator_http
    from emulator_http import PROJECT, SERVICE, STATUS, ApiError, Recorded
    from emulator_mcp import McpSurface, Reply
    from emulator_search import Hit, SearchSurface, parse_time

# The public API: import all of it from here, whichever module defines it.
__all__ = [
    "DEFAULT_UPDATE_TIME",
    "DOC_FIELDS",
    "FAULT_KINDS",
    "PROJECT",
    "SERVICE",
    "STATUS",
    "VIEWS",
    "ApiError",
    "Emulator",
    "Fault",
    "McpSurface",
    "Recorded",
    "Reply",
]

DEFAULT_UPDATE_TIME = "2026-01-01T00:00:00Z"
FAULT_KINDS = ("latency", "status", "drop", "truncate", "bad_json", "wrong_shape")
VIEWS = (
    "DOCUMENT_VIEW_UNSPECIFIED",
    "DOCUMENT_VIEW_BASIC",
    "DOCUMENT_VIEW_FULL",
    "DOCUMENT_VIEW_CONTENT",
)
# Proto field order; BASIC is every field but content.
DOC_FIELDS = (
    "name",
    "uri",
    "content",
    "description",
    "dataSource",
    "title",
    "updateTime",
    "view",
    "contentLengthBytes",
)
_REST = re.compile(r"^/(v1alpha|v1)([/:].*)$")


@dataclass
class Fault:
    """A misbehaviour for the next matching request(s); see `Emulator.inject`."""

    kind: str  # "latency" | "status" | "drop" | "truncate" | "bad_json" | "wrong_shape"
    seconds: float = 0.0
    status: int = 503
    retry_after: str | None = None
    # truncate only: "short" declares the whole body's length and hangs up after half of it
    # (the client sees a cut connection); "exact" declares the cut length, so the reply is
    # well-framed HTTP whose JSON (or SSE event) simply stops halfway.
    framing: str = "short"


@dataclass
class _Pending:
    fault: Fault
    remaining: int  # -1 = forever
    path: str | None
    tool: str | None
    rate: float | None = None  # the share of matching requests it hits; None: every one
    name: str | None = None  # only requests that ask for this document


def _asks_for(rec: Recorded, name: str) -> bool:
    """True if `rec` fetches document `name` (REST get or batchGet, MCP get_documents)."""
    if rec.path == "/mcp":
        params = rec.json.get("params") if isinstance(rec.json, dict) else None
        arguments = params.get("arguments") if isinstance(params, dict) else None
        names = arguments.get("names") if isinstance(arguments, dict) else None
        return isinstance(names, list) and name in names
    return name in rec.query.get("names", ()) or rec.path.endswith("/" + name)


def _format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Emulator(SearchSurface, McpSurface):
    """The fake upstream. Switches are plain attributes; flip them at any time."""

    ApiError = ApiError

    def __init__(
        self,
        documents: Iterable[dict[str, Any]] = (),
        api_key: str | None = "test-key",
        seed: int = 0,
    ) -> None:
        self.api_key = api_key
        # Decides which requests a fault injected with a `rate` hits: seeded, so a run that
        # sends the same requests in the same order meets the same faults.
        self.rng = random.Random(seed)
        self.api_disabled = False
        self.key_restricted = False
        self.batch_404_names_document = True
        self.mcp_structured = True
        self.mcp_sse = False
        self.mcp_require_session = False
        self.mcp_error_style = "iserror"
        self.quota_per_minute: dict[str, int] = {}  # keys: "get" (Get+BatchGet), "search", "answer"
        # Seconds each quota_per_minute limit counts over: a minute, as upstream does; tests of
        # pacing shorten it (with DK_MIRROR_QUOTA_WINDOW to match) so they run in seconds.
        self.quota_window = 60.0
        self.answer_quota_per_day: int | None = None
        self.clock: Callable[[], float] = time.monotonic  # for the per-minute windows
        self.requests: list[Recorded] = []
        self.base_url = ""
        self.mcp_url = ""
        self._lock = threading.RLock()
        self._docs: dict[str, dict[str, Any]] = {}
        self._version = 0  # bumped on every corpus change; keys the search-results cache
        self._results: dict[tuple[Any, ...], list[Hit]] = {}
        self._faults: list[_Pending] = []
        self._usage: dict[str, deque[float]] = {}
        self._answers = 0
        self._sessions: set[str] = set()
        self._server: emulator_http.Server | None = None
        self._thread: threading.Thread | None = None
        for doc in documents:
            self._store(doc, None)
        # How it was built, for `restore`: the documents, and every switch a test may flip.
        self._built_docs = dict(self._docs)
        self._built_switches = copy.deepcopy(self._switches())

    def _switches(self) -> dict[str, Any]:
        """The public attributes that change how it answers (not its address or its log)."""
        return {
            key: value
            for key, value in vars(self).items()
            if not key.startswith("_") and key not in ("requests", "base_url", "mcp_url")
        }

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Emulator:
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is None:
            self._server = emulator_http.Server(self)
            self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
            self.mcp_url = self.base_url + "/mcp"
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.close_connections()
            server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- corpus --------------------------------------------------------------------------------
    def put(self, doc: dict[str, Any]) -> None:
        """Add or replace a document; without an updateTime, it gets a newer one than before."""
        self._store(doc, datetime.now(UTC).replace(microsecond=0))

    def remove(self, name: str) -> None:
        """Delete a document (KeyError if it is not there)."""
        with self._lock:
            del self._docs[name]
            self._version += 1

    def _store(self, doc: dict[str, Any], now: datetime | None) -> None:
        d = {k: v for k, v in doc.items() if k != "view"}
        uri, name = d.get("uri"), d.get("name")
        if not name and uri:
            name = "documents/" + uri.split("://", 1)[-1]
        if not name:
            raise ValueError(f"a document needs a name or a uri: {doc!r}")
        d["name"] = name
        d["uri"] = uri or "https://" + name.removeprefix("documents/")
        d["content"] = d.get("content") or ""
        d.setdefault("title", "")
        d.setdefault("description", "")
        d["dataSource"] = d.get("dataSource") or urlsplit(d["uri"]).hostname or name.split("/")[1]
        d["contentLengthBytes"] = len(d["content"].encode())
        with self._lock:
            if not d.get("updateTime"):
                if now is None:
                    d["updateTime"] = DEFAULT_UPDATE_TIME
                else:
                    previous = self._docs.get(name, {}).get("updateTime", DEFAULT_UPDATE_TIME)
                    d["updateTime"] = _format_time(
                        max(now, parse_time(previous) + timedelta(seconds=1))
                    )
            self._docs[name] = d
            self._version += 1

    # -- recording and faults ------------------------------------------------------------------
    def _record(
        self, method: str, raw_path: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> Recorded:
        rec = emulator_http.parse_request(method, raw_path, headers, body)
        rec.at = self.clock()
        with self._lock:
            self.requests.append(rec)
        return rec

    def count(self, path: str | None = None, tool: str | None = None) -> int:
        """Requests so far, optionally only those whose path starts with `path` / calling `tool`."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if (path is None or r.path.startswith(path)) and (tool is None or r.tool == tool)
            )

    def reset(self) -> None:
        """Forget recorded requests, queued faults and quota usage."""
        with self._lock:
            self.requests.clear()
            self._faults.clear()
            self._usage.clear()
            self._answers = 0

    def restore(self) -> None:
        """Back to how it was built, for the next test on an emulator shared by a module: its
        documents, every switch (key, quotas, MCP style, clock, rng), no MCP session, and
        `reset`'s forgetting of requests, faults and usage. (`reset` alone keeps documents and
        switches: tests call it midway to count afresh.)"""
        with self._lock:
            self.reset()
            for key in set(self._switches()) - set(self._built_switches):
                delattr(self, key)  # an attribute a test added
            for key, value in copy.deepcopy(self._built_switches).items():
                setattr(self, key, value)
            if self._docs != self._built_docs:
                self._docs = dict(self._built_docs)
                self._version += 1
            self._sessions.clear()

    def inject(
        self,
        fault: Fault,
        times: int = 1,
        path: str | None = None,
        tool: str | None = None,
        rate: float | None = None,
        name: str | None = None,
    ) -> None:
        """Queue `fault` for the next `times` requests (-1: forever) whose path starts with `path`,
        that call MCP tool `tool` and/or that ask for document `name`; with none of these, any
        request matches. First queued wins.

        With `rate` (0 < rate <= 1) the fault hits only that share of matching requests, drawn
        from the seeded `rng`: each request draws one number, and the rated faults it matches
        take consecutive slices of [0, 1) in queue order, so five faults at rate 0.1 each hit
        10% of requests apiece and never the same one. `times` counts only the hits."""
        if fault.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {fault.kind!r}; expected one of {FAULT_KINDS}")
        if times == 0 or times < -1:
            raise ValueError("times must be positive, or -1 for forever")
        if rate is not None and not 0 < rate <= 1:
            raise ValueError(f"rate must be in (0, 1], got {rate}")
        if fault.framing not in ("short", "exact"):
            raise ValueError(f"unknown framing {fault.framing!r}; expected 'short' or 'exact'")
        with self._lock:
            self._faults.append(_Pending(fault, times, path, tool, rate, name))

    def _take_fault(self, rec: Recorded) -> Fault | None:
        with self._lock:
            draw: float | None = None
            share = 0.0
            for pending in self._faults:
                if pending.path is not None and not rec.path.startswith(pending.path):
                    continue
                if pending.tool is not None and rec.tool != pending.tool:
                    continue
                if pending.name is not None and not _asks_for(rec, pending.name):
                    continue
                if pending.rate is not None:
                    if draw is None:
                        draw = self.rng.random()
                    low, share = share, share + pending.rate
                    if not low <= draw < share:
                        continue
                if pending.remaining > 0:
                    pending.remaining -= 1
                    if pending.remaining == 0:
                        self._faults.remove(pending)
                return pending.fault
        return None

    def _fault_reply(self, fault: Fault | None, rec: Recorded) -> Reply | None:
        if fault is None or fault.kind in ("latency", "truncate"):
            return None  # answer normally (truncate cuts the normal answer short)
        if fault.kind == "status":
            error = ApiError(fault.status)
            if fault.retry_after is not None:
                error.headers["Retry-After"] = fault.retry_after
            return self._error_reply(error)
        json_type = {"Content-Type": "application/json; charset=UTF-8"}
        if fault.kind == "bad_json":
            return (
                200,
                json_type,
                b'<html><body>Upstream sent garbage {"documents": [</body></html>',
            )
        shape: Any = {"docs": 1}
        if rec.path == "/mcp" and isinstance(rec.json, dict) and "id" in rec.json:
            # A valid JSON-RPC envelope around a result of the wrong shape.
            shape = {"jsonrpc": "2.0", "id": rec.json["id"], "result": shape}
        return 200, json_type, json.dumps(shape).encode()

    # -- REST ----------------------------------------------------------------------------------
    _json_reply = staticmethod(emulator_http.json_reply)
    _error_reply = staticmethod(emulator_http.error_reply)

    def _dispatch(self, rec: Recorded) -> Reply:
        if rec.path == "/mcp":
            return self._mcp(rec)
        try:
            match = _REST.match(rec.path)
            version, rest = match.groups() if match else ("", "")
            if rec.method == "GET" and rest == "/documents:batchGet":
                self._check_auth(rec, version, "BatchGetDocuments")
                return self._json_reply(200, self._batch_get(rec.query))
            if rec.method == "GET" and rest == "/documents:searchDocumentChunks":
                self._check_auth(rec, version, "SearchDocumentChunks")
                return self._json_reply(200, self._search_page(rec.query))
            if rec.method == "GET" and rest.startswith("/documents/"):
                self._check_auth(rec, version, "GetDocument")
                return self._json_reply(200, self._get(rest[1:], rec.query))
            if rec.method == "POST" and rest == ":answerQuery":
                self._check_auth(rec, version, "AnswerQuery")
                return self._json_reply(200, self._answer_query(rec.json, rec.body))
            raise ApiError(404, f"Method not found: {rec.method} {rec.path}")
        except ApiError as error:
            return self._error_reply(error)

    def _check_auth(self, rec: Recorded, version: str, rpc: str) -> None:
        key = rec.headers.get("x-goog-api-key")
        if key is None and "key" in rec.query:
            key = rec.query["key"][0]
        if self.api_key is not None and key is None:
            raise emulator_http.credentials_missing()
        if self.api_key is not None and key != self.api_key:
            raise emulator_http.api_key_invalid()
        if self.api_disabled:
            raise emulator_http.service_disabled()
        if self.key_restricted:
            raise emulator_http.key_service_blocked(version, rpc)

    def _charge(self, kind: str) -> None:
        """Count one call against the quotas for `kind` ("get", "search", "answer") or raise 429."""
        with self._lock:
            now = self.clock()
            limit = self.quota_per_minute.get(kind)
            window = self._usage.setdefault(kind, deque())
            span = self.quota_window
            while window and window[0] <= now - span:
                window.popleft()
            if limit is not None and len(window) >= limit:
                metric, wait = f"{kind} requests", max(1, math.ceil(window[0] + span - now))
                quota = f"{kind}RequestsPerMinutePerProject"
                raise emulator_http.quota_exceeded(metric, f"{metric} per minute", quota, wait)
            daily = self.answer_quota_per_day
            if kind == "answer" and daily is not None and self._answers >= daily:
                now_utc = datetime.now(UTC)
                midnight = (now_utc + timedelta(days=1)).replace(
                    hour=0, minute=0, second=0, microsecond=0
                )
                wait = math.ceil((midnight - now_utc).total_seconds())
                metric, quota = "AnswerQuery requests", "AnswerQueryRequestsPerDayPerProject"
                raise emulator_http.quota_exceeded(metric, f"{metric} per day", quota, wait)
            window.append(now)
            if kind == "answer":
                self._answers += 1

    @staticmethod
    def _view(query: dict[str, list[str]]) -> str:
        raw = query.get("view", ["DOCUMENT_VIEW_CONTENT"])[0]
        view = VIEWS[int(raw)] if raw in ("0", "1", "2", "3") else raw
        if view not in VIEWS:
            raise ApiError(
                400,
                "Invalid value at 'view' "
                f'(type.googleapis.com/google.developers.knowledge.v1.DocumentView), "{raw}"',
            )
        return "DOCUMENT_VIEW_CONTENT" if view == "DOCUMENT_VIEW_UNSPECIFIED" else view

    @staticmethod
    def _render(doc: dict[str, Any], view: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in DOC_FIELDS:
            if key == "view":
                out[key] = view
            elif key in doc and not (key == "content" and view == "DOCUMENT_VIEW_BASIC"):
                out[key] = doc[key]
        return out

    def _lookup(self, names: list[str]) -> list[dict[str, Any]]:
        """Documents for `names` in order (batchGet rules: 1..20 names, atomic 404)."""
        if not names:
            raise ApiError(400, "At least one document name is required.")
        if len(names) > 20:
            raise ApiError(400, f"At most 20 documents can be requested at once; got {len(names)}.")
        for name in names:
            if len(name) > 500:
                raise ApiError(400, "A document name must be at most 500 characters.")
            if not name.startswith("documents/"):
                raise ApiError(
                    400,
                    f"Invalid document name {name!r}: expected documents/{{uri_without_scheme}}.",
                )
        with self._lock:
            missing = [n for n in names if n not in self._docs]
            if missing:
                raise ApiError(
                    404,
                    f"Document {missing[0]} not found." if self.batch_404_names_document else None,
                )
            return [self._docs[n] for n in names]

    def _get(self, name: str, query: dict[str, list[str]]) -> dict[str, Any]:
        view = self._view(query)
        if len(name) > 500:
            raise ApiError(400, "A document name must be at most 500 characters.")
        self._charge("get")
        with self._lock:
            doc = self._docs.get(name)
        if doc is None:
            raise ApiError(404, f"Document {name} not found.")
        return self._render(doc, view)

    def _batch_get(self, query: dict[str, list[str]]) -> dict[str, Any]:
        view = self._view(query)
        self._charge("get")
        return {"documents": [self._render(d, view) for d in self._lookup(query.get("names", []))]}
