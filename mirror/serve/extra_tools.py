"""MCP tools beyond Google's three, offered only with `serve --extra-tools`: the default
server lists exactly Google's tools and schemas, so a client written for Google's sees no
difference."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations

if TYPE_CHECKING:
    from ..service import Mirror

# An agent reads every entry it is given: a page of changes, not the whole log.
MAX_CHANGES = 100
LIST_CHANGES = "list_changes"
_DESCRIPTION = (
    "What changed in the mirrored documentation, newest first: each change's document name, "
    "when it was observed, its kind (added, changed, removed), a one-line summary of what it "
    "touched (a deprecation, caution or warning notice, a limit, an API version, headings, "
    "code samples, text, or only layout) and the old and new content hashes and updateTime. "
    "`since`: a duration (7d, 12h), an event id (only later events) or a date (2026-11-30); "
    "`prefix`: only names starting with it (e.g. documents/developer.chrome.com/docs/"
    "extensions/); `limit`: at most this many (1-100, default 20)."
)
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "since": {"type": "string", "description": "7d, 12h, an event id, or a date"},
        "prefix": {"type": "string", "description": "only names starting with this"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_CHANGES, "default": 20},
    },
    "additionalProperties": False,
}


def extra_tools(
    mirror: Mirror,
    guarded: Callable[[Callable[[], tuple[dict[str, Any], dict[str, Any]]]], CallToolResult],
) -> list[Tool]:
    """The extra tools over `mirror`; `guarded` turns a payload and its _meta, or a failure,
    into a result."""

    def list_changes(since: str | None = None, prefix: str | None = None,
                     limit: int = 20) -> CallToolResult:  # fmt: skip
        """The change log, newest first."""
        return guarded(lambda: ({"changes": [
            event.to_json()
            for event in mirror.list_changes(since=since, prefix=prefix,
                                             limit=max(1, min(limit, MAX_CHANGES)))
        ]}, {}))  # fmt: skip

    tool = Tool.from_function(
        list_changes,
        name=LIST_CHANGES,
        description=_DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    tool.parameters = INPUT_SCHEMA  # a schema with the bounds written out for the agent
    return [tool]
