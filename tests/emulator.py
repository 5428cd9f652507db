"""A local stand-in for the Developer Knowledge API, for tests of the project's HTTP clients.

`Emulator` is a real HTTP/1.1 server on 127.0.0.1 (an ephemeral port) that speaks REST v1 and
v1alpha plus the MCP streamable-HTTP endpoint (``emulator_mcp.py``), records every request, and
misbehaves on demand (`inject` a `Fault`, or flip a switch). Standard library only, so it never
depends on the code it tests. Contract: shared/reference/developer-knowledge-api.md.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit

if __package__:
    from .emulator_mcp import McpSurface, Reply
else:  # loaded as a top-level module (pytest's rootdir-relative import of tests/)
    from emulator_mcp import McpSurface, Reply

SERVICE = "developerknowledge.googleapis.com"
PROJECT = "123"
DEFAULT_UPDATE_TIME = "2026-01-01T00:00:00Z"
STATUS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "The caller does not have permission."),
    404: ("NOT_FOUND", "Requested entity was not found."),
    409: ("ABORTED", "The operation was aborted."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    499: ("CANCELLED", "The operation was cancelled."),
    500: ("INTERNAL", "Internal error encountered."),
    501: ("NOT_IMPLEMENTED", "Operation is not implemented, or supported, or enabled."),
    502: ("UNAVAILABLE", "Bad gateway."),
    503: ("UNAVAILABLE", "The service is currently unavailable."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}
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
_WORD = re.compile(r"[a-z0-9]+")
# fmt: off
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i",
    "in", "is", "it", "its", "of", "on", "or", "the", "to", "use", "using", "what", "when", "where",
    "which", "who", "why", "with", "you", "your",
})
# fmt: on
_HEADING = re.compile(r"^#{1,6}\s")


@dataclass
class Fault:
    """A misbehaviour for the next matching request(s); see `Emulator.inject`."""

    kind: str  # "latency" | "status" | "drop" | "truncate" | "bad_json" | "wrong_shape"
    seconds: float = 0.0
    status: int = 503
    retry_after: str | None = None


@dataclass
class Recorded:
    """One request as the emulator saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    json: Any = None
    jsonrpc_method: str | None = None
    tool: str | None = None


@dataclass
class _Pending:
    fault: Fault
    remaining: int  # -1 = forever
    path: str | None
    tool: str | None


@dataclass
class _Hit:
    score: float
    doc: dict[str, Any]
    chunk_id: str
    content: str


class ApiError(Exception):
    """A Google-style API error: HTTP code, canonical status, message, optional ErrorInfo."""

    def __init__(
        self, code: int, message: str | None = None, reason: str | None = None, **meta: str
    ) -> None:
        self.code = code
        self.message = message or STATUS.get(code, ("UNKNOWN", "Unknown error."))[1]
        self.reason = reason
        self.metadata = meta
        self.headers: dict[str, str] = {}
        super().__init__(f"{code} {self.message}")

    def body(self) -> dict[str, Any]:
        """The JSON body Google sends for this error."""
        error: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "status": STATUS.get(self.code, ("UNKNOWN",))[0],
        }
        if self.reason:
            info: dict[str, Any] = {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": self.reason,
                "domain": "googleapis.com",
            }
            if self.metadata:
                info["metadata"] = dict(self.metadata)
            error["details"] = [info]
        return {"error": error}


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _chunk(content: str, low: int = 1024, high: int = 2048) -> list[str]:
    """Split Markdown at headings (outside code fences) into pieces of about low..high chars."""
    sections: list[str] = []
    current: list[str] = []
    fenced = False
    for line in content.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and _HEADING.match(line) and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    sections.append("".join(current))
    pieces: list[str] = []
    for section in sections:
        while len(section) > high:
            cut = max(section.rfind("\n\n", low, high), section.rfind("\n", low, high))
            cut = cut if cut > 0 else high
            pieces.append(section[:cut])
            section = section[cut:]
        pieces.append(section)
    chunks: list[str] = []
    buffer = ""
    for piece in pieces:
        if buffer and len(buffer) + len(piece) > high:
            chunks.append(buffer)
            buffer = ""
        buffer += piece
        if len(buffer) >= low:
            chunks.append(buffer)
            buffer = ""
    chunks.append(buffer)
    return [c.strip() for c in chunks if c.strip()]


def _first_sentence(text: str) -> str:
    lines = [line.strip() for line in text.splitlines()]
    prose = [
        line for line in lines if line and not line.startswith(("#", "```", "{%", "<", "|", "---"))
    ]
    flat = " ".join(prose or [line.lstrip("#").strip() for line in lines if line])
    match = re.match(r"(.{10,300}?[.!?])(?:\s|$)", flat)
    if match:
        return match.group(1)
    return flat[:200] + ("..." if len(flat) > 200 else "")


class _Filter:
    """AIP-160 subset: comparisons on four fields, NOT/-, OR (binds tighter), AND, parentheses."""

    TOKEN = re.compile(
        r'\s*(?:("(?:[^"\\]|\\.)*")|(<=|>=|!=|=|<|>)|([()\-])|([A-Za-z_][A-Za-z0-9_.]*|\d+))'
    )
    STRING_FIELDS: ClassVar[dict[str, str]] = {"data_source": "dataSource", "uri": "uri"}

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.rstrip()
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ApiError(400, f"Invalid filter: unexpected character at position {pos}.")
            index = m.lastindex or 4
            self.tokens.append((("str", "op", "punct", "word")[index - 1], m.group(index)))
            pos = m.end()
        self.pos = 0

    @classmethod
    def compile(cls, text: str) -> Callable[[dict[str, Any]], bool]:
        """Parse `text` into a predicate over stored documents; ApiError(400) if it is invalid."""
        parser = cls(text)
        predicate = parser.conjunction()
        if parser.pos != len(parser.tokens):
            raise ApiError(400, f"Invalid filter: unexpected {parser.tokens[parser.pos][1]!r}.")
        return predicate

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise ApiError(400, "Invalid filter: unexpected end of expression.")
        self.pos += 1
        return token

    def conjunction(self) -> Callable[[dict[str, Any]], bool]:
        parts = [self.disjunction()]
        while (token := self.peek()) is not None and token != ("punct", ")"):
            if token == ("word", "AND"):
                self.take()
            parts.append(self.disjunction())  # juxtaposition is an implicit AND in AIP-160
        return parts[0] if len(parts) == 1 else (lambda doc: all(p(doc) for p in parts))

    def disjunction(self) -> Callable[[dict[str, Any]], bool]:
        parts = [self.unary()]
        while self.peek() == ("word", "OR"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else (lambda doc: any(p(doc) for p in parts))

    def unary(self) -> Callable[[dict[str, Any]], bool]:
        if self.peek() in (("word", "NOT"), ("punct", "-")):
            self.take()
            inner = self.unary()
            return lambda doc: not inner(doc)
        if self.peek() == ("punct", "("):
            self.take()
            inner = self.conjunction()
            if self.take() != ("punct", ")"):
                raise ApiError(400, "Invalid filter: expected ')'.")
            return inner
        return self.comparison()

    def comparison(self) -> Callable[[dict[str, Any]], bool]:
        kind, name = self.take()
        op_kind, op = self.take()
        value_kind, raw = self.take()
        if kind != "word" or op_kind != "op" or value_kind not in ("str", "word"):
            raise ApiError(400, f"Invalid filter near {name!r}: expected FIELD OPERATOR VALUE.")
        try:
            value: Any = json.loads(raw) if value_kind == "str" else raw
        except ValueError:
            raise ApiError(400, f"Invalid filter: bad string literal {raw}.") from None
        if name in self.STRING_FIELDS:
            if op not in ("=", "!=") or value_kind != "str":
                raise ApiError(
                    400, f'Invalid filter: {name} supports only = and != with a "quoted" value.'
                )
            key = self.STRING_FIELDS[name]
            return (lambda d: d[key] == value) if op == "=" else (lambda d: d[key] != value)
        if name == "content_length_bytes":
            try:
                number = int(value)
            except ValueError:
                raise ApiError(400, f"Invalid filter: {raw} is not an integer.") from None
            return _compare(op, lambda d: d["contentLengthBytes"], number)
        if name == "update_time":
            try:
                moment = _parse_time(value)
                if value_kind != "str" or moment.tzinfo is None:
                    raise ValueError(value)
            except ValueError:
                raise ApiError(
                    400, f"Invalid filter: {raw} is not an RFC 3339 timestamp."
                ) from None
            return _compare(op, lambda d: _parse_time(d["updateTime"]), moment)
        raise ApiError(400, f"Invalid filter: unknown field {name!r}.")


def _compare(
    op: str, get: Callable[[dict[str, Any]], Any], value: Any
) -> Callable[[dict[str, Any]], bool]:
    tests: dict[str, Callable[[Any], bool]] = {
        "=": lambda x: x == value,
        "!=": lambda x: x != value,
        "<": lambda x: x < value,
        "<=": lambda x: x <= value,
        ">": lambda x: x > value,
        ">=": lambda x: x >= value,
    }
    check = tests[op]
    return lambda doc: check(get(doc))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, emulator: Emulator) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.emulator = emulator
        self.open: set[socket.socket] = set()
        self.open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.open_lock:
            self.open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.open_lock:
            self.open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout during a latency fault, stop()) is expected, not news.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        # Idle keep-alive connections would otherwise go on being served after stop().
        with self.open_lock:
            sockets = list(self.open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server_version = "ESF"
    sys_version = ""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without this, Nagle plus delayed ACKs
        # add ~40 ms to every keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return data
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        emulator = self.server.emulator
        rec = emulator._record(self.command, self.path, self.headers.items(), self._read_body())
        fault = emulator._take_fault(rec)
        kind = fault.kind if fault else None
        if fault and fault.seconds > 0:
            time.sleep(fault.seconds)
        if kind == "drop":
            self.close_connection = True
            return
        try:
            reply = emulator._fault_reply(fault, rec) if fault else None
            reply = reply or emulator._dispatch(rec)
        except Exception as exc:  # an emulator bug must still answer, visibly
            reply = emulator._error_reply(ApiError(500, f"emulator error: {exc!r}"))
        status, headers, body = reply
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if kind == "truncate":
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
        else:
            self.wfile.write(body)
        self.wfile.flush()


class Emulator(McpSurface):
    """The fake upstream. Switches are plain attributes; flip them at any time."""

    ApiError = ApiError

    def __init__(
        self, documents: Iterable[dict[str, Any]] = (), api_key: str | None = "test-key"
    ) -> None:
        self.api_key = api_key
        self.api_disabled = False
        self.key_restricted = False
        self.batch_404_names_document = True
        self.mcp_structured = True
        self.mcp_sse = False
        self.mcp_require_session = False
        self.mcp_error_style = "iserror"
        self.quota_per_minute: dict[str, int] = {}  # keys: "get" (Get+BatchGet), "search", "answer"
        self.answer_quota_per_day: int | None = None
        self.clock: Callable[[], float] = time.monotonic  # for the per-minute windows
        self.requests: list[Recorded] = []
        self.base_url = ""
        self.mcp_url = ""
        self._lock = threading.RLock()
        self._docs: dict[str, dict[str, Any]] = {}
        self._chunks: dict[str, list[str]] = {}
        self._terms: dict[str, list[Counter[str]]] = {}
        self._version = 0  # bumped on every corpus change; keys the search-results cache
        self._results: dict[tuple[Any, ...], list[_Hit]] = {}
        self._faults: list[_Pending] = []
        self._usage: dict[str, deque[float]] = {}
        self._answers = 0
        self._sessions: set[str] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        for doc in documents:
            self._store(doc, None)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Emulator:
        """Bind an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is None:
            self._server = _Server(self)
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
            self._chunks.pop(name, None)
            self._terms.pop(name, None)
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
                        max(now, _parse_time(previous) + timedelta(seconds=1))
                    )
            self._docs[name] = d
            self._chunks.pop(name, None)
            self._terms.pop(name, None)
            self._version += 1

    # -- recording and faults ------------------------------------------------------------------
    def _record(
        self, method: str, raw_path: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> Recorded:
        parts = urlsplit(raw_path)
        lowered: dict[str, str] = {}
        for key, value in headers:
            key = key.lower()
            lowered[key] = f"{lowered[key]}, {value}" if key in lowered else value
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        rec = Recorded(
            method,
            unquote(parts.path),
            parse_qs(parts.query, keep_blank_values=True),
            lowered,
            body,
        )
        rec.json = parsed
        if (
            rec.path == "/mcp"
            and isinstance(parsed, dict)
            and isinstance(parsed.get("method"), str)
        ):
            rec.jsonrpc_method = parsed["method"]
            params = parsed.get("params")
            if rec.jsonrpc_method == "tools/call" and isinstance(params, dict):
                rec.tool = params.get("name") if isinstance(params.get("name"), str) else None
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

    def inject(
        self, fault: Fault, times: int = 1, path: str | None = None, tool: str | None = None
    ) -> None:
        """Queue `fault` for the next `times` requests (-1: forever) whose path starts with `path`
        and/or that call MCP tool `tool`; with neither, any request matches. First queued wins."""
        if fault.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {fault.kind!r}; expected one of {FAULT_KINDS}")
        if times == 0 or times < -1:
            raise ValueError("times must be positive, or -1 for forever")
        with self._lock:
            self._faults.append(_Pending(fault, times, path, tool))

    def _take_fault(self, rec: Recorded) -> Fault | None:
        with self._lock:
            for pending in self._faults:
                if pending.path is not None and not rec.path.startswith(pending.path):
                    continue
                if pending.tool is not None and rec.tool != pending.tool:
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
    def _json_reply(
        self, status: int, payload: Any, headers: dict[str, str] | None = None
    ) -> Reply:
        headers = {"Content-Type": "application/json; charset=UTF-8", **(headers or {})}
        return status, headers, json.dumps(payload, ensure_ascii=False).encode("utf-8")

    def _error_reply(self, error: ApiError) -> Reply:
        return self._json_reply(error.code, error.body(), error.headers)

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
        if self.api_key is not None:
            if key is None:
                raise ApiError(
                    401,
                    "Method doesn't allow unregistered callers (callers without established "
                    "identity). Please use API Key or other form of API consumer identity to call "
                    "this API.",
                    "CREDENTIALS_MISSING",
                    service=SERVICE,
                )
            if key != self.api_key:
                raise ApiError(
                    400,
                    "API key not valid. Please pass a valid API key.",
                    "API_KEY_INVALID",
                    service=SERVICE,
                )
        if self.api_disabled:
            url = f"https://console.developers.google.com/apis/api/{SERVICE}/overview"
            url += f"?project={PROJECT}"
            raise ApiError(
                403,
                f"Developer Knowledge API has not been used in project {PROJECT} before or it is "
                f"disabled. Enable it by visiting {url} then retry. If you enabled this API "
                "recently, wait a few minutes for the action to propagate to our systems and "
                "retry.",
                "SERVICE_DISABLED",
                service=SERVICE,
                consumer=f"projects/{PROJECT}",
                activationUrl=url,
            )
        if self.key_restricted:
            method = f"google.developers.knowledge.{version}.DeveloperKnowledge.{rpc}"
            raise ApiError(
                403,
                f"Requests to this API {SERVICE} method {method} are blocked.",
                "API_KEY_SERVICE_BLOCKED",
                service=SERVICE,
                methodName=method,
                consumer=f"projects/{PROJECT}",
            )

    def _charge(self, kind: str) -> None:
        """Count one call against the quotas for `kind` ("get", "search", "answer") or raise 429."""
        with self._lock:
            now = self.clock()
            limit = self.quota_per_minute.get(kind)
            window = self._usage.setdefault(kind, deque())
            while window and window[0] <= now - 60:
                window.popleft()
            if limit is not None and len(window) >= limit:
                error = ApiError(
                    429,
                    f"Quota exceeded for quota metric '{kind} requests' and limit '{kind} "
                    f"requests per minute' of service '{SERVICE}' for consumer "
                    f"'project_number:{PROJECT}'.",
                    "RATE_LIMIT_EXCEEDED",
                    service=SERVICE,
                    quota_limit=f"{kind}RequestsPerMinutePerProject",
                )
                error.headers["Retry-After"] = str(max(1, math.ceil(window[0] + 60 - now)))
                raise error
            daily = self.answer_quota_per_day
            if kind == "answer" and daily is not None and self._answers >= daily:
                error = ApiError(
                    429,
                    "Quota exceeded for quota metric 'AnswerQuery requests' and limit "
                    f"'AnswerQuery requests per day' of service '{SERVICE}' for consumer "
                    f"'project_number:{PROJECT}'.",
                    "RATE_LIMIT_EXCEEDED",
                    service=SERVICE,
                    quota_limit="AnswerQueryRequestsPerDayPerProject",
                )
                now_utc = datetime.now(UTC)
                midnight = (now_utc + timedelta(days=1)).replace(
                    hour=0, minute=0, second=0, microsecond=0
                )
                error.headers["Retry-After"] = str(math.ceil((midnight - now_utc).total_seconds()))
                raise error
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

    @staticmethod
    def _filter(text: str | None) -> Callable[[dict[str, Any]], bool] | None:
        if not text or not text.strip():
            return None
        if len(text) > 500:
            raise ApiError(400, "filter must be at most 500 characters.")
        return _Filter.compile(text)

    def _search_page(self, query: dict[str, list[str]]) -> dict[str, Any]:
        text = query.get("query", [""])[0]
        if not text.strip():
            raise ApiError(400, "query is required.")
        if len(text) > 500:
            raise ApiError(400, "query must be at most 500 characters.")
        raw_size = query.get("pageSize", ["0"])[0] or "0"
        try:
            size = int(raw_size)
        except ValueError:
            raise ApiError(
                400, f"Invalid value at 'page_size' (TYPE_INT32), \"{raw_size}\""
            ) from None
        if size < 0:
            raise ApiError(400, "page_size must not be negative.")
        size = min(size or 5, 100)
        filter_text = query.get("filter", [""])[0]
        self._filter(filter_text)  # a bad filter is a 400 that costs no quota
        fingerprint = hashlib.sha256(f"{text}\0{filter_text}".encode()).hexdigest()[:12]
        offset = 0
        token = query.get("pageToken", [""])[0]
        if token:
            try:
                raw_offset, seen = (
                    base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode().split("|")
                )
                offset = int(raw_offset)
            except ValueError:
                raise ApiError(400, "Invalid page token.") from None
            if seen != fingerprint:
                raise ApiError(
                    400, "Invalid page token: it belongs to a different query or filter."
                )
        self._charge("search")
        hits = self._search(text, filter_text)
        results = [
            {
                "parent": h.doc["name"],
                "id": h.chunk_id,
                "content": h.content,
                "document": self._render(h.doc, "DOCUMENT_VIEW_BASIC"),
                "relevanceScore": h.score,
            }
            for h in hits[offset : offset + size]
        ]
        page: dict[str, Any] = {"results": results}
        if offset + size < len(hits):
            page["nextPageToken"] = base64.urlsafe_b64encode(
                f"{offset + size}|{fingerprint}".encode()
            ).decode()
        return page

    def _search(self, text: str, filter_text: str | None) -> list[_Hit]:
        """Every matching chunk, best first: term-frequency score in [0, 1]; ties by name, chunk."""
        predicate = self._filter(filter_text)
        words = list(dict.fromkeys(_words(text)))
        terms = [w for w in words if w not in _STOP] or words
        with self._lock:
            key = (tuple(terms), filter_text or "", self._version)
            if (
                key in self._results
            ):  # a client walking pages asks the same question again and again
                return self._results[key]
            found: list[tuple[float, str, int, _Hit]] = []
            for name in sorted(self._docs) if terms else ():
                doc = self._docs[name]
                if predicate is not None and not predicate(doc):
                    continue
                if name not in self._chunks:
                    self._chunks[name] = _chunk(doc["content"])
                    self._terms[name] = [Counter(_words(c)) for c in self._chunks[name]]
                title = Counter(_words(doc["title"]))
                for index, (content, counts) in enumerate(
                    zip(self._chunks[name], self._terms[name], strict=True)
                ):
                    matched = sum(1 for t in terms if counts[t] or title[t])
                    if not matched:
                        continue
                    tf = sum(min(counts[t], 20) + 2 * min(title[t], 3) for t in terms)
                    score = round(0.7 * matched / len(terms) + 0.3 * tf / (tf + 10), 6)
                    found.append((-score, name, index, _Hit(score, doc, f"c{index}", content)))
            found.sort(key=lambda item: item[:3])
            if len(self._results) >= 16:
                self._results.pop(next(iter(self._results)))
            hits = self._results[key] = [item[3] for item in found]
            return hits

    def _answer(self, text: str, filter_text: str | None) -> dict[str, Any]:
        """A deterministic 'grounded' answer from the top three chunks; citations in UTF-8 bytes."""
        answer, citations, references = "", [], []
        for index, hit in enumerate(self._search(text, filter_text)[:3]):
            source = hit.doc["title"] or hit.doc["name"]
            part = f"According to {source}: {_first_sentence(hit.content)}"
            answer += " " if answer else ""
            start = len(answer.encode())
            answer += part
            citations.append(
                {
                    "startIndex": start,
                    "endIndex": len(answer.encode()),
                    "sources": [{"referenceIndex": index}],
                }
            )
            chunk = {
                "parent": hit.doc["name"],
                "content": hit.content,
                "document": self._render(hit.doc, "DOCUMENT_VIEW_BASIC"),
            }
            references.append({"documentReference": {"documentChunk": chunk}})
        if not answer:
            answer = "I could not find documentation that answers this question."
        return {"answerText": answer, "citations": citations, "references": references}

    def _answer_query(self, payload: Any, body: bytes) -> dict[str, Any]:
        if body and not isinstance(payload, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        payload = payload or {}
        unknown = sorted(set(payload) - {"query", "filter"})
        if unknown:
            raise ApiError(
                400,
                f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.',
            )
        text = payload.get("query")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "query is required.")
        if len(text) > 500:
            raise ApiError(400, "query must be at most 500 characters.")
        filter_text = payload.get("filter")
        if filter_text is not None and not isinstance(filter_text, str):
            raise ApiError(400, "filter must be a string.")
        self._filter(filter_text)  # a bad filter is a 400 that costs no quota
        self._charge("answer")
        return {"answer": self._answer(text, filter_text)}
