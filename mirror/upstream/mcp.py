"""The MCP client: the upstream's tools over streamable HTTP, hand-written JSON-RPC 2.0.

Why not the `mcp` SDK's own client (`mcp.Client`), which `serve/` uses as a server and the
tests use as a client:
- It is async only (`async with Client(...)`), while every caller here (the CLI, `Mirror`,
  the threads of `dk-mirror serve`) is synchronous; wrapping each call in an event loop
  would cost a loop per call or a loop thread to share.
- It opens a session per connection (a `server/discover` probe or the `initialize`
  handshake before the first call). Google's endpoint answers `tools/call` without one,
  so this client sends none until a server refuses with "session" in a 400/404, then
  initializes once and keeps the session id.
- Its requests go through its own HTTP stack (`httpx2`) with its own timeouts, outside
  this mirror's retry policy (tenacity: attempt budget, deadline, Retry-After) and the
  per-quota pacing every upstream call must pass through (`retry.py`, `pacing.py`).
- The reply may be plain JSON or an SSE stream (`text/event-stream`); both are read here
  under the same deadline, and a malformed body becomes a `ProtocolError`.
- The API key travels only in the `X-Goog-Api-Key` header, set in one place
  (`base.HttpUpstream`), so no SDK option can put it in a URL or a log line.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx

from .. import __version__
from ..errors import ProtocolError
from ..models import Answer, Document, SearchPage, View, data_source_of
from . import mcp_payloads as mcp_tools
from .base import (
    HttpUpstream,
    batch_of,
    check_order,
    check_query,
    page_size_of,
    parse_document,
    quoted,
)
from .http_errors import ErrorDetail, fail, parse_error_body, parse_error_text, raise_for_response
from .mcp_payloads import ANSWER_TOOL, GET_TOOL, SEARCH_TOOL
from .retry import ANSWER_QUOTA, GET_QUOTA, SEARCH_QUOTA, Quota, broken_body

log = logging.getLogger("mirror.upstream")

# Offered at initialize; the server answers with the version it will speak.
PROTOCOL_VERSION = "2025-06-18"
_ACCEPT = "application/json, text/event-stream"
# JSON-RPC codes that mean "you sent a bad request" rather than "the server broke".
_JSONRPC_BAD_REQUEST = (-32600, -32602)


@dataclass(frozen=True, slots=True)
class _Reply:
    response: httpx.Response
    message: dict[str, Any] | None  # the JSON-RPC response to our request, when there is one


class McpUpstream(HttpUpstream):
    """Developer Knowledge through its MCP endpoint (`{base}/mcp`), paced and retried like REST."""

    kind = "mcp"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.endpoint = self.base_url + "/mcp"
        self._ids = itertools.count(1)
        # Only set if the server turns out to want a session (the docs' examples use none).
        self._session_id: str | None = None
        self._protocol: str | None = None

    def batch_get(self, names: Sequence[str], view: View = View.CONTENT) -> list[Document]:
        """Documents for at most 20 canonical names, in request order; NotFound if any is absent."""
        wanted = batch_of(names)
        if not wanted:
            return []
        what = f"get_documents of {len(wanted)} document(s) from {self.label}"
        payload = self._call_tool(GET_TOOL, {"names": wanted}, what=what, names=wanted)
        docs = payload.get("documents")
        if not isinstance(docs, list):
            raise ProtocolError(f"{what}: the tool result has no `documents` list")
        return check_order(wanted, [_document(d, view, what) for d in docs], what)

    def get(self, name: str, view: View = View.CONTENT) -> Document:
        """One document by canonical name; NotFound if upstream has none."""
        return self.batch_get([name], view)[0]

    def search_chunks(
        self,
        query: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        filter: str | None = None,
    ) -> SearchPage:
        """The search_documents hits (query only; at most `page_size`, cut client-side)."""
        query, size = check_query(query), page_size_of(page_size)
        mcp_tools.refuse_rest_only(SEARCH_TOOL, page_token=page_token, filter=filter)
        what = f"{SEARCH_TOOL} for {quoted(query)} from {self.label}"
        payload = self._call_tool(SEARCH_TOOL, {"query": query}, what=what, quota=SEARCH_QUOTA)
        return mcp_tools.search_page(payload, size, what)

    def answer_query(self, query: str, *, filter: str | None = None) -> Answer:
        """A grounded answer with the names of the documents it used (MCP has no citations)."""
        query = check_query(query)
        mcp_tools.refuse_rest_only(ANSWER_TOOL, filter=filter)
        what = f"{ANSWER_TOOL} for {quoted(query)} from {self.label}"
        payload = self._call_tool(ANSWER_TOOL, {"query": query}, what=what, quota=ANSWER_QUOTA)
        return mcp_tools.answer(payload, what)

    def close(self) -> None:
        """End the session, if the server gave us one, and release connections."""
        if self._session_id is not None:
            # Best effort: the server expires idle sessions anyway.
            with contextlib.suppress(httpx.HTTPError):
                self._client.delete(
                    self.endpoint,
                    headers={**self._headers(), "Mcp-Session-Id": self._session_id},
                    timeout=5.0,
                )
            self._session_id = None
        super().close()

    def _call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        what: str,
        names: Sequence[str] = (),
        quota: Quota = GET_QUOTA,
    ) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}

        def attempt(seconds_left: float) -> dict[str, Any]:
            message = self._exchange(
                "tools/call", params, time.monotonic() + seconds_left, what=what, names=names
            )
            return _tool_payload(message, what=what, names=names, key=self._key)

        return self._paced_retry(what, attempt, quota)

    def _exchange(
        self,
        method: str,
        params: dict[str, Any],
        deadline: float,
        *,
        what: str,
        names: Sequence[str],
    ) -> dict[str, Any]:
        """One JSON-RPC request; opens a session once if the server says it needs one."""
        reply = self._post(method, params, deadline)
        if self._wants_session(reply.response):
            self._initialize(deadline, what=what)
            reply = self._post(method, params, deadline)
        return self._message_of(reply, what=what, names=names)

    def _wants_session(self, response: httpx.Response) -> bool:
        # Servers refuse a missing session with 400 and an expired one with 404, and say so
        # ("No valid session ID provided", "Session not found"). A plain 404 is a missing
        # document, not a session problem: re-initializing would only waste calls.
        return response.status_code in (400, 404) and "session" in response.text.lower()

    def _initialize(self, deadline: float, *, what: str) -> None:
        self._session_id = self._protocol = None
        init = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "dk-mirror", "version": __version__},
        }
        reply = self._post("initialize", init, deadline)
        message = self._message_of(reply, what=f"{what} (initialize)", names=())
        if "error" in message:
            what = f"{what} (initialize)"
            fail(_rpc_error_detail(message["error"], self._key, what), what=what)
        result = message.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        self._session_id = reply.response.headers.get("mcp-session-id")
        self._protocol = version if isinstance(version, str) else None
        done = self._post("notifications/initialized", None, deadline, notification=True)
        raise_for_response(done.response, what=f"{what} (initialized)", key=self._key)
        log.debug("mcp session opened (protocol %s)", self._protocol)

    def _post(
        self,
        method: str,
        params: dict[str, Any] | None,
        deadline: float,
        *,
        notification: bool = False,
    ) -> _Reply:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        rid = None if notification else next(self._ids)
        if rid is not None:
            body["id"] = rid
        if params is not None:
            body["params"] = params
        headers = {"Content-Type": "application/json", "Accept": _ACCEPT, **self._headers()}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        if self._protocol is not None:
            headers["MCP-Protocol-Version"] = self._protocol
        started = time.monotonic()
        timeout = self._timeout_within(max(deadline - started, 0.001))
        message: dict[str, Any] | None = None
        with self._client.stream(
            "POST", self.endpoint, json=body, headers=headers, timeout=timeout
        ) as response:
            content_type = response.headers.get("content-type", "")
            if (
                rid is not None
                and response.is_success
                and content_type.startswith("text/event-stream")
            ):
                # Stop at our answer: the stream may go on with notifications we do not need.
                message = _from_sse(response.iter_lines(), rid, self.endpoint)
            else:
                response.read()
                if rid is not None and response.is_success:
                    message = _from_json(response.text, rid, self.endpoint)
        names = params.get("arguments", {}).get("names") if params else None
        tool = params.get("name") if params and method == "tools/call" else None
        log.debug(
            "POST mcp %s%s names=%s -> %d in %.3f s",
            method,
            f" {tool}" if tool else "",
            len(names) if isinstance(names, list) else "-",
            response.status_code,
            time.monotonic() - started,
        )
        return _Reply(response, message)

    def _message_of(self, reply: _Reply, *, what: str, names: Sequence[str]) -> dict[str, Any]:
        raise_for_response(reply.response, what=what, names=names, key=self._key)
        if reply.message is None:
            raise ProtocolError(
                f"{what}: HTTP {reply.response.status_code} with no JSON-RPC answer"
            )
        return reply.message


def _match(data: Any, rid: int) -> dict[str, Any] | None:
    """The JSON-RPC response to request `rid` within a message or batch, if present."""
    for item in data if isinstance(data, list) else [data]:
        if (
            isinstance(item, dict)
            and item.get("id") == rid
            and ("result" in item or "error" in item)
        ):
            return item
    return None


def _from_json(text: str, rid: int, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        # Cut short or garbled on the way: as passing as a 503, so worth another try.
        raise broken_body(
            where, f"answered with a body that is not JSON ({len(text)} chars)"
        ) from None
    message = _match(data, rid)
    if message is None:
        raise ProtocolError(f"{where} answered without a JSON-RPC response to request {rid}")
    return message


def _from_sse(lines: Iterable[str], rid: int, where: str) -> dict[str, Any]:
    """Read Server-Sent Events until the one carrying the response to `rid`."""
    data: list[str] = []
    for line in itertools.chain(lines, [""]):  # a final blank line flushes the last event
        if line == "":
            if data:
                try:
                    event = json.loads("\n".join(data))
                except ValueError:
                    # An event cut mid-stream (or garbled): try the call again.
                    raise broken_body(where, "sent an event that is not JSON") from None
                data = []
                message = _match(event, rid)
                if message is not None:
                    return message
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    # The stream stopped before our answer: a connection cut short, worth another try.
    raise broken_body(where, f"ended its event stream without answering request {rid}")


def _tool_payload(
    message: dict[str, Any], *, what: str, names: Sequence[str], key: str | None
) -> dict[str, Any]:
    """The tool's JSON output, or the mapped error if the call failed."""
    if "error" in message:
        fail(_rpc_error_detail(message["error"], key, what), what=what, names=names)
    result = message.get("result")
    if not isinstance(result, dict):
        raise ProtocolError(f"{what}: the JSON-RPC result is not an object")
    texts = [
        b["text"]
        for b in result.get("content") or ()
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    if result.get("isError") is True:
        fail(parse_error_text(" ".join(texts) or "(no message)", key=key), what=what, names=names)
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        return structured
    # Servers (and proxies) may drop structuredContent; the same JSON is then in a text block.
    if texts:
        try:
            data = json.loads(texts[0])
        except ValueError:
            data = None
        if isinstance(data, dict):
            return data
    raise ProtocolError(f"{what}: the tool result has neither structuredContent nor JSON text")


def _rpc_error_detail(error: object, key: str | None, what: str) -> ErrorDetail:
    """An ErrorDetail from a JSON-RPC error object, finding the Google status where it hides."""
    if not isinstance(error, dict):
        raise ProtocolError(f"{what}: the JSON-RPC error is not an object")
    code, data = error.get("code"), error.get("data")
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    if isinstance(data, dict) and ("status" in data or "code" in data):
        # Some servers embed the Google error body ({code, message, status, details}).
        detail = parse_error_body(None, json.dumps({"error": data}), key=key)
        if detail.status is not None:
            return detail
    if isinstance(code, int) and 100 <= code <= 599:
        body = json.dumps({"error": {"code": code, "message": message}})
        return parse_error_body(code, body, key=key)
    detail = parse_error_text(message or json.dumps(error), key=key)
    if detail.status is not None:
        return detail
    if code in _JSONRPC_BAD_REQUEST:
        return ErrorDetail(400, "INVALID_ARGUMENT", detail.message)
    if code == -32603:
        return ErrorDetail(500, "INTERNAL", detail.message)
    raise ProtocolError(f"{what}: JSON-RPC error {code}: {detail.message}")


def _document(data: object, view: View, what: str) -> Document:
    """An MCP Document (name, uri, content, description, title) in the REST shape we store."""
    doc = parse_document(data, what)
    doc = replace(doc, data_source=doc.data_source or data_source_of(doc.name))
    return replace(doc, content=None) if view is View.BASIC else doc
