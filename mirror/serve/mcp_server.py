"""The MCP server: Google's three tools, with Google's schemas, answered from the mirror."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations

from .. import __version__
from ..models import Document
from ..names import uri_of
from . import api_errors, calls, provenance
from .options import ServeOptions
from .tool_schemas import BY_NAME

if TYPE_CHECKING:
    from ..service import Mirror
    from ..service.answers import AnswerResult
    from ..service.search import SearchResult
    from .answer_cache import AnswerCache

INSTRUCTIONS = (
    "A dk-mirror of Google's Developer Knowledge API: the same search_documents, get_documents "
    "and answer_query tools as developerknowledge.googleapis.com/mcp, answered from a local "
    "store of Google's developer documentation."
)
# The fields of a Document the MCP get_documents output carries (reference 6.1).
MCP_DOCUMENT_FIELDS = ("name", "uri", "content", "description", "title")


def build_server(
    mirror: Mirror, options: ServeOptions, cache: AnswerCache | None = None
) -> MCPServer:
    """An MCP server exposing search_documents, get_documents and answer_query over `mirror`
    (get_documents answers from `cache` when it holds the documents for the store as it is)."""
    secret = mirror.settings.api_key
    as_of = mirror.as_of

    def guarded(work: Callable[[], tuple[dict[str, Any], dict[str, Any]]]) -> CallToolResult:
        # `work` gives the payload (Google's schema) and its provenance (the result's _meta).
        try:
            return api_errors.tool_result(*work())
        except Exception as exc:  # every failure is a tool error the agent can read
            return api_errors.tool_error(api_errors.from_exception(exc, secret=secret))

    def search_documents(query: str) -> CallToolResult:
        """Find documentation chunks (Google's search_documents)."""

        def run() -> tuple[dict[str, Any], dict[str, Any]]:
            result = calls.search_documents(mirror, options, query)
            held = mirror.provenance([chunk.parent for chunk in result.page.results])
            meta = provenance.meta(
                held, result.as_of, source=result.source, recorded_at=result.recorded_at
            )
            return search_payload(result), meta

        return guarded(run)

    async def get_documents(names: list[str]) -> CallToolResult:
        """Full documents by name, at most 20 (Google's get_documents)."""
        generation = cache.generation() if cache is not None else None
        kept = cache.documents(names, generation) if cache is not None else None
        served = cache.served(names, generation) if cache is not None and kept else None
        if kept is not None and served is not None:
            payload = documents_payload(kept), provenance.meta(served, as_of)
            return guarded(lambda: payload)  # on the event loop: no store read

        def read() -> tuple[dict[str, Any], dict[str, Any]]:
            result = calls.get_documents(mirror, options, names)
            if cache is not None:
                cache.keep(names, result.documents, generation, served=result.served)
            return documents_payload(result.documents), provenance.meta(result.served, as_of)

        # The store read blocks: in the thread pool, as the SDK runs a sync tool.
        return await anyio.to_thread.run_sync(guarded, read)

    def answer_query(query: str) -> CallToolResult:
        """A grounded answer with the names of the documents used (Google's answer_query)."""

        def run() -> tuple[dict[str, Any], dict[str, Any]]:
            result = calls.answer_query(mirror, options, query)
            held = mirror.provenance(result.answer.reference_names)
            meta = provenance.meta(
                held, as_of, source=result.source, recorded_at=result.recorded_at
            )
            return answer_payload(result), meta

        return guarded(run)

    # In the order Google lists them; anything more only when asked for (--extra-tools).
    tools = [_tool(search_documents), _tool(answer_query), _tool(get_documents)]
    if options.extra_tools:
        from .extra_tools import extra_tools

        tools += extra_tools(mirror, guarded)
    return MCPServer(
        "dk-mirror",
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=tools,
        log_level="WARNING",
    )


def _tool(handler: Callable[..., CallToolResult | Awaitable[CallToolResult]]) -> Tool:
    """A Tool running `handler`, listed with the reference schemas rather than derived ones."""
    spec = BY_NAME[handler.__name__]
    tool = Tool.from_function(
        handler,
        name=spec["name"],
        description=spec["description"],
        annotations=ToolAnnotations.model_validate(spec["annotations"]),
    )
    # The SDK derives schemas from the signature; agents written for Google's server expect
    # Google's exact ones (descriptions, $defs, readOnly), so they replace the derived ones.
    # The handler still validates its arguments against its signature.
    tool.parameters = copy.deepcopy(spec["inputSchema"])
    tool.fn_metadata.output_schema = copy.deepcopy(spec["outputSchema"])
    return tool


def documents_payload(documents: Sequence[Document]) -> dict[str, Any]:
    """get_documents output: `{"documents": [{name, uri, content, description, title}]}`."""
    return {"documents": [mcp_document(doc) for doc in documents]}


def mcp_document(doc: Document) -> dict[str, Any]:
    """The MCP Document subset; unset fields are omitted, as proto3 JSON omits them."""
    values = {
        "name": doc.name,
        "uri": doc.uri or uri_of(doc.name),
        "content": doc.content,
        "description": doc.description,
        "title": doc.title,
    }
    return {key: value for key, value in values.items() if value is not None}


def search_payload(result: SearchResult) -> dict[str, Any]:
    """search_documents output: `{"results": [{parent, id, content}]}`."""
    results = []
    for chunk in result.page.results:
        item = {"parent": chunk.parent, "id": chunk.id, "content": chunk.content}
        results.append({k: v for k, v in item.items() if v is not None})
    return {"results": results}


def answer_payload(result: AnswerResult) -> dict[str, Any]:
    """answer_query output: `{"answerText", "references": [document names]}`."""
    answer = result.answer
    return {"answerText": answer.answer_text, "references": answer.reference_names}
