"""HTTP plumbing of the test emulator in ``emulator.py``: Google-style errors (and the texts upstream
sends when it refuses a call), replies, request records, and the threaded server whose handler
hands each request to the `Emulator`. Nothing here imports the rest of the emulator at run time.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

if __package__:
    from .emulator_mcp import Reply
else:  # loaded as a top-level module (pytest's rootdir-relative import of tests/)
    from emulator_mcp import Reply

if TYPE_CHECKING:
    from .emulator import Emulator

SERVICE = "developerknowledge.googleapis.com"
PROJECT = "123"
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
    at: float = 0.0  # the emulator's clock when the request arrived
    status: int = 0  # the HTTP status it was answered with (0: none, e.g. a dropped connection)


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


# The errors upstream sends when it refuses a call before running it (texts verbatim).
def credentials_missing() -> ApiError:
    """401: the request carries no API key."""
    return ApiError(
        401,
        "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API.",
        "CREDENTIALS_MISSING",
        service=SERVICE,
    )


def api_key_invalid() -> ApiError:
    """400: the API key is not one upstream knows."""
    message = "API key not valid. Please pass a valid API key."
    return ApiError(400, message, "API_KEY_INVALID", service=SERVICE)


def service_disabled() -> ApiError:
    """403: the API is not enabled in the key's project."""
    url = f"https://console.developers.google.com/apis/api/{SERVICE}/overview?project={PROJECT}"
    return ApiError(
        403,
        f"Developer Knowledge API has not been used in project {PROJECT} before or it is "
        f"disabled. Enable it by visiting {url} then retry. If you enabled this API recently, "
        "wait a few minutes for the action to propagate to our systems and retry.",
        "SERVICE_DISABLED",
        service=SERVICE,
        consumer=f"projects/{PROJECT}",
        activationUrl=url,
    )


def key_service_blocked(version: str, rpc: str) -> ApiError:
    """403: the key's API restrictions do not allow method `rpc`."""
    method = f"google.developers.knowledge.{version}.DeveloperKnowledge.{rpc}"
    return ApiError(
        403,
        f"Requests to this API {SERVICE} method {method} are blocked.",
        "API_KEY_SERVICE_BLOCKED",
        service=SERVICE,
        methodName=method,
        consumer=f"projects/{PROJECT}",
    )


def quota_exceeded(metric: str, limit: str, quota_limit: str, retry_after: int) -> ApiError:
    """429 with Retry-After: quota `metric` hit `limit`."""
    error = ApiError(
        429,
        f"Quota exceeded for quota metric '{metric}' and limit '{limit}' of service "
        f"'{SERVICE}' for consumer 'project_number:{PROJECT}'.",
        "RATE_LIMIT_EXCEEDED",
        service=SERVICE,
        quota_limit=quota_limit,
    )
    error.headers["Retry-After"] = str(retry_after)
    return error


def parse_request(
    method: str, raw_path: str, headers: Iterable[tuple[str, str]], body: bytes
) -> Recorded:
    """A `Recorded` for one raw request: decoded path and query, lower-cased headers, JSON body."""
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
    if rec.path == "/mcp" and isinstance(parsed, dict) and isinstance(parsed.get("method"), str):
        rec.jsonrpc_method = parsed["method"]
        params = parsed.get("params")
        if rec.jsonrpc_method == "tools/call" and isinstance(params, dict):
            rec.tool = params.get("name") if isinstance(params.get("name"), str) else None
    return rec


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    """A JSON reply (UTF-8, non-ASCII kept as is) with any extra `headers`."""
    headers = {"Content-Type": "application/json; charset=UTF-8", **(headers or {})}
    return status, headers, json.dumps(payload, ensure_ascii=False).encode("utf-8")


def error_reply(error: ApiError) -> Reply:
    """The reply Google sends for `error`, with its headers (e.g. Retry-After)."""
    return json_reply(error.code, error.body(), error.headers)


class Server(ThreadingHTTPServer):
    """A threaded server on an ephemeral 127.0.0.1 port that tracks its open connections."""

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
        # A client that hung up early (its timeout during a latency fault, stop()) is expected,
        # not news; any other error still prints its traceback.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
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
    server: Server

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
            reply = error_reply(ApiError(500, f"emulator error: {exc!r}"))
        status, headers, body = reply
        rec.status = status
        cut = fault is not None and kind == "truncate"
        if cut and fault is not None and fault.framing == "exact":
            body, cut = body[: len(body) // 2], False  # honest framing around half a body
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if cut:
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
        else:
            self.wfile.write(body)
        self.wfile.flush()
