"""The upstream MCP tools' arguments and results, translated to and from our models.

Over MCP the tools take only a `query` (or `names`) and return less than REST does: search
results are `{parent, id, content}`, answers carry reference names and no citations.
"""

from __future__ import annotations

from typing import Any

from ..config import ENV_TRANSPORT
from ..errors import InvalidInput, ProtocolError
from ..models import Answer, DocumentChunk, SearchPage

SEARCH_TOOL = "search_documents"
ANSWER_TOOL = "answer_query"
GET_TOOL = "get_documents"


def refuse_rest_only(tool: str, **given: object) -> None:
    """InvalidInput if any REST-only argument is set: the MCP tool has no way to carry it."""
    # An empty string is proto3's "not set", so only a real value is refused.
    wanted = [name.replace("_", " ") for name, value in given.items() if value]
    if wanted:
        raise InvalidInput(
            f"{' and '.join(wanted)} cannot be sent over MCP: the {tool} tool takes only a query",
            hint=(
                f"paging and filters need the REST API: use --transport rest "
                f"(or {ENV_TRANSPORT}=rest)"
            ),
        )


def search_page(payload: dict[str, Any], page_size: int | None, what: str) -> SearchPage:
    """A SearchPage from a search_documents result, cut to `page_size` (MCP cannot page)."""
    results = payload.get("results") or []
    if not isinstance(results, list):
        raise ProtocolError(f"{what}: the tool result's `results` is not a list")
    if page_size is not None:
        results = results[:page_size]
    try:
        # Extra fields a server may add (document, relevanceScore) are kept by from_api.
        chunks = tuple(DocumentChunk.from_api(r) for r in results)
    except ProtocolError as exc:
        raise ProtocolError(f"{what}: {exc.message}") from None
    # No next page token, whatever the server says: a token could not be sent back over MCP.
    return SearchPage(chunks)


def answer(payload: dict[str, Any], what: str) -> Answer:
    """An Answer from an answer_query result: the text and one bare chunk per reference name."""
    text = payload.get("answerText", "")
    references = payload.get("references") or []
    if not isinstance(text, str) or not isinstance(references, list):
        raise ProtocolError(f"{what}: the tool result is not {{answerText, references}}")
    if not all(isinstance(r, str) for r in references):
        # A server sending REST's reference objects (with citations) is read as REST.
        try:
            return Answer.from_api(payload)
        except ProtocolError as exc:
            raise ProtocolError(f"{what}: {exc.message}") from None
    bad = [r for r in references if not r.startswith("documents/")]
    if bad:
        raise ProtocolError(f"{what}: reference {bad[0][:120]!r} is not a document name")
    return Answer(
        text, (), tuple(DocumentChunk(parent=name, id=None, content="") for name in references)
    )
