"""One status table for the whole error tree, and REST, MCP and the web pages all following it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest

from mirror import errors
from mirror.errors import STATUS_BY_HTTP, MirrorError, NotCached, NotFound
from mirror.service import Mirror
from tests.conftest import CANARY_KEY

# Every class in mirror/errors.py, as REST, MCP and the browser must report it.
EXPECTED = {
    "MirrorError": (500, "INTERNAL"),
    "InvalidInput": (400, "INVALID_ARGUMENT"),
    "InvalidName": (400, "INVALID_ARGUMENT"),
    "OutputError": (500, "INTERNAL"),
    "ConfigError": (502, "UNAVAILABLE"),
    "MissingApiKey": (502, "UNAVAILABLE"),
    "WrongUpstream": (502, "UNAVAILABLE"),
    "NetworkForbidden": (502, "UNAVAILABLE"),
    "NotCached": (404, "NOT_FOUND"),
    "NotThen": (404, "NOT_FOUND"),
    "StoreError": (500, "INTERNAL"),
    "SchemaError": (500, "INTERNAL"),
    "IndexRebuilding": (503, "UNAVAILABLE"),
    "WriteConflict": (503, "UNAVAILABLE"),
    "UpstreamError": (502, "UNAVAILABLE"),
    "NotFound": (404, "NOT_FOUND"),
    "BadRequest": (400, "INVALID_ARGUMENT"),
    "AuthError": (502, "UNAVAILABLE"),
    "PermissionDenied": (502, "UNAVAILABLE"),
    "QuotaExceeded": (429, "RESOURCE_EXHAUSTED"),
    "Unavailable": (503, "UNAVAILABLE"),
    "ProtocolError": (502, "UNAVAILABLE"),
}
NAME = "documents/developer.chrome.com/docs/extensions/mv3/raising"


def error_classes() -> list[type[MirrorError]]:
    """Every exception class defined in mirror/errors.py."""
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, MirrorError) and cls.__module__ == errors.__name__
    ]


def instance(cls: type[MirrorError]) -> MirrorError:
    """An instance of `cls` whose message and hint mention the API key (to check scrubbing)."""
    if issubclass(cls, NotCached | NotFound):
        return cls([NAME])
    return cls(f"{cls.__name__} happened near {CANARY_KEY}", hint=f"not {CANARY_KEY}")


def test_the_table_covers_every_exception_class() -> None:
    from mirror.serve.api_errors import STATUS_TABLE, status_of

    assert {cls.__name__ for cls in error_classes()} == set(EXPECTED)
    for cls in error_classes():
        status, code = status_of(instance(cls))
        assert (status, code) == EXPECTED[cls.__name__], cls.__name__
    for _, status, code in STATUS_TABLE:
        assert STATUS_BY_HTTP[status] == code  # the codes Google pairs with these statuses
    # Each row is reachable: no earlier row is a superclass of a later one.
    kinds = [kind for kind, _, _ in STATUS_TABLE]
    for i, kind in enumerate(kinds):
        assert not any(issubclass(kind, earlier) for earlier in kinds[:i]), kind


def test_rest_mcp_and_pages_give_each_class_the_same_status(
    store_mirror: Callable[..., Mirror],
    serve_app: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp import Client

    mirror = store_mirror("errors", offline=True, api_key=CANARY_KEY)
    raising: list[MirrorError] = []

    def get_documents(*args: Any, **kwargs: Any) -> Any:
        raise raising[0]

    monkeypatch.setattr(mirror, "get_documents", get_documents)
    url = serve_app(mirror)
    seen: dict[str, tuple[int, str, str, int, str]] = {}

    async def main() -> None:
        async with Client(url + "/mcp") as client, httpx.AsyncClient(base_url=url) as http:
            for cls in error_classes():
                raising[:] = [instance(cls)]
                rest = await http.get(f"/v1/{NAME}")
                tool = await client.call_tool("get_documents", {"names": [NAME]})
                page = await http.get(f"/doc/{NAME[len('documents/') :]}")
                text = tool.content[0].text  # type: ignore[union-attr]
                assert tool.is_error
                error = rest.json()["error"]
                assert error["code"] == rest.status_code
                seen[cls.__name__] = (
                    rest.status_code,
                    error["status"],
                    text,
                    page.status_code,
                    page.text,
                )

    anyio.run(main)
    for name, (rest_status, rest_code, tool_text, page_status, page_text) in seen.items():
        status, code = EXPECTED[name]
        assert (rest_status, rest_code) == (status, code), name
        assert tool_text.startswith(f"{code} ({status}): "), (name, tool_text)
        assert page_status == status, name
        assert CANARY_KEY not in tool_text + page_text, name
