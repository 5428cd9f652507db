"""The three tools exactly as Google's MCP server lists them (reference section 6.1).

Names, descriptions, input and output schemas and annotations are the captured `tools/list`
payload, verbatim, so an agent configured for Google's server works unchanged against a mirror.
The capture itself is `tests/data/mcp_tools_list.json` (the emulator serves it); this is the
package's own copy, as an installed package cannot read tests/, and a test keeps the two equal.
Data only; `mcp_server.py` attaches the handlers.
"""

from __future__ import annotations

from typing import Any

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

BY_NAME: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in TOOLS}
