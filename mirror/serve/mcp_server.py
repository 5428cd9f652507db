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
from . import api_errors, calls
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

    def guarded(work: Callable[[], dict[str, Any]]) -> CallToolResult:
        try:
            return api_errors.tool_result(work())
        except Exception as exc:  # every failure is a tool error the agent can read
            return api_errors.tool_error(api_errors.from_exception(exc, secret=secret))

    def search_documents(query: str) -> CallToolResult:
        """Find documentation chunks (Google's search_documents)."""
        return guarded(lambda: search_payload(calls.search_documents(mirror, options, query)))

    async def get_documents(names: list[str]) -> CallToolResult:
        """Full documents by name, at most 20 (Google's get_documents)."""
        generation = cache.generation() if cache is not None else None
        kept = cache.documents(names, generation) if cache is not None else None
        if kept is not None:
            return guarded(lambda: documents_payload(kept))  # on the event loop: no store read

        def read() -> dict[str, Any]:
            documents = calls.get_documents(mirror, options, names).documents
            if cache is not None:
                cache.keep(names, documents, generation)
            return documents_payload(documents)

        # The store read blocks: in the thread pool, as the SDK runs a sync tool.
        return await anyio.to_thread.run_sync(guarded, read)

    def answer_query(query: str) -> CallToolResult:
        """A grounded answer with the names of the documents used (Google's answer_query)."""
        return guarded(lambda: answer_payload(calls.answer_query(mirror, options, query)))

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
