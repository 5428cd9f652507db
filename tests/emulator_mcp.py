"""The MCP (streamable HTTP, JSON-RPC 2.0) face of the test emulator in ``emulator.py``.

`TOOLS` is the upstream ``tools/list`` payload as captured with the MCP inspector (schemas and
annotations verbatim), read from ``data/mcp_tools_list.json``. `McpSurface` is mixed into
`Emulator`, which supplies the state, the switches and the REST core this code calls
(`_check_auth`, `_charge`, `_search`, `_answer`, `_lookup`, `_error_reply`, `ApiError`). Nothing here imports the rest of the emulator, so the
two modules can be loaded either as a package (``tests.emulator``) or as top-level modules.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

Reply = tuple[int, dict[str, str], bytes]

# The captured payload lives once, as data, beside the tests that use it.
TOOLS_LIST_FILE = Path(__file__).resolve().parent / "data" / "mcp_tools_list.json"
TOOLS: list[dict[str, Any]] = json.loads(TOOLS_LIST_FILE.read_text(encoding="utf-8"))["tools"]

# The REST method whose quota and "blocked method" message each tool stands for.
TOOL_RPC = {
    "search_documents": ("SearchDocumentChunks", "search"),
    "get_documents": ("BatchGetDocuments", "get"),
    "answer_query": ("AnswerQuery", "answer"),
}
MCP_DOC_FIELDS = ("name", "uri", "content", "description", "title")


def _json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


class McpSurface:
    """Answers POST /mcp the way developerknowledge.googleapis.com/mcp does (see the switches)."""

    # Supplied by Emulator; declared for readers.
    mcp_structured: bool
    mcp_sse: bool
    mcp_require_session: bool
    mcp_error_style: str
    _sessions: set[str]
    _lock: Any
    ApiError: type[Exception]

    def _mcp(self, rec: Any) -> Reply:
        sid = rec.headers.get("mcp-session-id")
        with self._lock:
            known = sid in self._sessions
            if rec.method == "DELETE" and self.mcp_require_session and known:
                self._sessions.discard(sid)
                return 200, {}, b""
        if rec.method != "POST":
            body = self._rpc_error(None, -32000, "Method not allowed.")
            return 405, {"Allow": "POST", "Content-Type": "application/json"}, _json_bytes(body)
        msg = rec.json
        if msg is None:
            return self._rpc(400, self._rpc_error(None, -32700, "Parse error"))
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return self._rpc(400, self._rpc_error(None, -32600, "Invalid Request"))
        method, rid = msg.get("method"), msg.get("id")
        if method != "initialize" and self.mcp_require_session and not known:
            error = self._rpc_error(rid, -32600, "Bad Request: No valid session ID provided")
            return self._rpc(400, error)
        if not isinstance(method, str) or "id" not in msg:
            return 202, {}, b""  # a notification, or a client's reply to us: nothing to answer
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method == "initialize":
            return self._initialize(rid, params)
        if method == "ping":
            return self._rpc(200, {"jsonrpc": "2.0", "id": rid, "result": {}})
        if method == "tools/list":
            return self._rpc(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        if method == "tools/call":
            return self._tools_call(rec, rid, params)
        return self._rpc(400, self._rpc_error(rid, -32601, "Method not supported"))

    def _initialize(self, rid: Any, params: dict[str, Any]) -> Reply:
        version = params.get("protocolVersion")
        result = {
            "protocolVersion": version if isinstance(version, str) else "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "developerknowledge", "version": "1.0.0"},
        }
        headers = {}
        if self.mcp_require_session:
            sid = uuid.uuid4().hex
            with self._lock:
                self._sessions.add(sid)
            headers["Mcp-Session-Id"] = sid
        return self._rpc(200, {"jsonrpc": "2.0", "id": rid, "result": result}, headers)

    def _tools_call(self, rec: Any, rid: Any, params: dict[str, Any]) -> Reply:
        name = params.get("name")
        if name not in TOOL_RPC:
            return self._rpc(200, self._rpc_error(rid, -32602, f"Unknown tool: {name}"))
        args = params.get("arguments") or {}
        rpc, quota = TOOL_RPC[name]
        try:
            self._check_auth(rec, "v1", rpc)  # type: ignore[attr-defined]
            if not isinstance(args, dict):
                raise self.ApiError(400, "arguments must be an object.")
            self._charge(quota)  # type: ignore[attr-defined]
            data = getattr(self, f"_tool_{name}")(args)
        except self.ApiError as exc:
            return self._tool_failure(rid, exc)
        result: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(data)}]}
        if self.mcp_structured:
            result["structuredContent"] = data
        result["isError"] = False
        return self._rpc(200, {"jsonrpc": "2.0", "id": rid, "result": result})

    def _query_arg(self, args: dict[str, Any]) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise self.ApiError(400, "query is required.")
        if len(query) > 500:
            raise self.ApiError(400, "query must be at most 500 characters.")
        return query

    def _tool_search_documents(self, args: dict[str, Any]) -> dict[str, Any]:
        hits = self._search(self._query_arg(args), None)[:5]  # type: ignore[attr-defined]
        return {
            "results": [
                {"parent": h.doc["name"], "id": h.chunk_id, "content": h.content} for h in hits
            ]
        }

    def _tool_get_documents(self, args: dict[str, Any]) -> dict[str, Any]:
        names = args.get("names")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self.ApiError(400, "names must be a list of document names.")
        docs = self._lookup(names)  # type: ignore[attr-defined]
        return {"documents": [{k: d[k] for k in MCP_DOC_FIELDS} for d in docs]}

    def _tool_answer_query(self, args: dict[str, Any]) -> dict[str, Any]:
        answer = self._answer(self._query_arg(args), None)  # type: ignore[attr-defined]
        refs = [r["documentReference"]["documentChunk"]["parent"] for r in answer["references"]]
        return {"answerText": answer["answerText"], "references": list(dict.fromkeys(refs))}

    def _tool_failure(self, rid: Any, exc: Any) -> Reply:
        style = self.mcp_error_style
        if style == "http":
            return self._error_reply(exc)  # type: ignore[attr-defined]
        if style == "jsonrpc":
            error = {"code": exc.code, "message": exc.message, "data": exc.body()["error"]}
            return self._rpc(200, {"jsonrpc": "2.0", "id": rid, "error": error})
        if style == "iserror":
            result = {"content": [{"type": "text", "text": exc.message}], "isError": True}
            return self._rpc(200, {"jsonrpc": "2.0", "id": rid, "result": result})
        raise ValueError(f"unknown mcp_error_style {style!r}")

    @staticmethod
    def _rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}

    def _rpc(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        headers = dict(headers or {})
        if self.mcp_sse and status == 200:
            headers["Content-Type"] = "text/event-stream"
            headers["Cache-Control"] = "no-cache"
            body = b"event: message\ndata: " + _json_bytes(payload) + b"\n\n"
            return status, headers, body
        headers["Content-Type"] = "application/json; charset=UTF-8"
        return status, headers, _json_bytes(payload)
