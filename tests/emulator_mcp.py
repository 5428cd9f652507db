"""The MCP (streamable HTTP, JSON-RPC 2.0) face of the test emulator in ``emulator.py``.

`TOOLS` is the upstream ``tools/list`` payload as captured with the MCP inspector (schemas and
annotations verbatim). `McpSurface` is mixed into `Emulator`, which supplies the state, the
switches and the REST core this code calls (`_check_auth`, `_charge`, `_search`, `_answer`,
`_lookup`, `_error_reply`, `ApiError`). Nothing here imports the rest of the emulator, so the
two modules can be loaded either as a package (``tests.emulator``) or as top-level modules.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

Reply = tuple[int, dict[str, str], bytes]

_NAME_FORMAT = (
    "Format: `documents/{uri_without_scheme}` Example: "
    "`documents/docs.cloud.google.com/storage/docs/creating-buckets`"
)
_ANNOTATIONS = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
_DOMAINS = [
    "ADK: adk.dev",
    "Android: developer.android.com",
    "Apigee: docs.apigee.com",
    "Chrome: developer.chrome.com",
    "Dart: dart.dev",
    "Firebase: firebase.google.com",
    "Flutter: docs.flutter.dev",
    "Fuchsia: fuchsia.dev",
    "Gemini CLI: geminicli.com",
    "Go: go.dev",
    "Google AI: ai.google.dev",
    "Google Antigravity: antigravity.google",
    "Google Cloud: cloud.google.com & docs.cloud.google.com",
    "Google Developers, Ads, Search, Google Maps, Youtube: developers.google.com",
    "Google Home: developers.home.google.com",
    "Google Maps Platform: mapsplatform.google.com",
    "TensorFlow: www.tensorflow.org",
    "Web: web.dev",
]
_SEARCH_DESCRIPTION = (
    "Use this tool to find documentation about Google developer products. The documents "
    "contain official APIs, code snippets, release notes, best practices, guides, debugging "
    "info, and more. It covers the following products and domains:\n\n\n"
    + "".join(f"* {d}\n\n" for d in _DOMAINS)
    + "\nThis tool returns chunks of text, names, and URLs for matching documents. If the returned "
    "chunks are not detailed enough to answer the user's question, use `get_documents` with the "
    "`parent` from this tool's output to retrieve the full document content.\n"
)
_ANSWER_DESCRIPTION = (
    "Use answer_query to get a grounded answer to a query about Google developer products. "
    "This tool has limited quota. This tool will synthesize information from the corpus to "
    "generate an answer to the query. answer_query grounds answers using the same corpus as "
    "search_documents. \nThis tool returns the generated answer_text and a list of document "
    "names (references) used to generate the answer. Use get_documents with the document names "
    "to fetch the entire document content if needed.\n\nIf you get a 429 out of quota error, "
    "use search_documents instead.\n"
)
_GET_DESCRIPTION = (
    "Use this tool to retrieve the full content of a single document or up to 20 documents in a "
    "single call. The document names should be obtained from the `parent` field of results from a "
    "call to the `search_documents` tool. Set the `names` parameter to a list of document names."
)


def _output(description: str) -> dict[str, Any]:
    return {"description": description, "readOnly": True, "type": "string"}


TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_documents",
        "description": _SEARCH_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "description": "Required. The raw query string provided by the user, such as "
                    '"How to create a Cloud Storage bucket?".',
                    "type": "string",
                }
            },
            "required": ["query"],
            "description": "Request schema for search_documents. Use the query field to search for "
            "related Google developer documentation.",
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "results": {
                    "description": "The search results for the given query. Each Document in "
                    "this list contains a snippet of content relevant to the search query. Use the "
                    "DocumentChunk.name field of each result with get_documents to retrieve the "
                    "full document content.",
                    "items": {"$ref": "#/$defs/DocumentChunk"},
                    "type": "array",
                }
            },
            "$defs": {
                "DocumentChunk": {
                    "description": "A DocumentChunk represents a piece of content from a "
                    "Document in the DeveloperKnowledge corpus. To fetch the entire document "
                    "content, pass the `parent` to get_document or batch_get_documents.",
                    "properties": {
                        "content": _output("Output only. The content of the document chunk."),
                        "id": _output(
                            "Output only. The ID of this chunk within the document. The chunk "
                            "ID is unique within a document, but not globally unique across "
                            "documents. The chunk ID is not stable and may change over time."
                        ),
                        "parent": _output(
                            "Output only. The resource name of the document this chunk is from. "
                            + _NAME_FORMAT
                        ),
                    },
                    "type": "object",
                }
            },
            "description": "Response schema for search_documents.",
        },
        "annotations": dict(_ANNOTATIONS),
    },
    {
        "name": "answer_query",
        "description": _ANSWER_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"description": "Required. The query to answer.", "type": "string"}
            },
            "required": ["query"],
            "description": "Request message for AnswerQuery.",
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "answerText": {"description": "The answer to the query.", "type": "string"},
                "references": {
                    "description": "Output only. The resource names of the documents used to "
                    "generate the answer.",
                    "items": {"type": "string"},
                    "readOnly": True,
                    "type": "array",
                },
            },
            "description": "Response message for AnswerQuery.",
        },
        "annotations": dict(_ANNOTATIONS),
    },
    {
        "name": "get_documents",
        "description": _GET_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {
                    "description": "Required. The names of the documents to retrieve, as "
                    "returned by search_documents. A maximum of 20 documents can be retrieved in "
                    "one call. The documents are returned in the same order as the `names` in the "
                    "request. " + _NAME_FORMAT,
                    "items": {"type": "string"},
                    "type": "array",
                }
            },
            "required": ["names"],
            "description": "Request schema for get_documents.",
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "documents": {
                    "description": "Documents requested.",
                    "items": {"$ref": "#/$defs/Document"},
                    "type": "array",
                }
            },
            "$defs": {
                "Document": {
                    "description": "A Document represents a piece of content from the Developer "
                    "Knowledge corpus.",
                    "properties": {
                        "content": _output(
                            "Output only. The content of the document in Markdown format."
                        ),
                        "description": _output("Output only. A description of the document."),
                        "name": {
                            "description": "Identifier. The resource name of the document. "
                            + _NAME_FORMAT,
                            "type": "string",
                            "x-google-identifier": True,
                        },
                        "title": _output("Output only. The title of the document."),
                        "uri": _output(
                            "Output only. The URI of the content, such as "
                            "`https://cloud.google.com/storage/docs/creating-buckets`."
                        ),
                    },
                    "type": "object",
                }
            },
            "description": "Response schema for get_documents.",
        },
        "annotations": dict(_ANNOTATIONS),
    },
]

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
