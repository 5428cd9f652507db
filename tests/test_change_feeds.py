"""The change feeds of `dk-mirror serve` (/feeds/changes.atom and .json) read as feed readers
read them, on a real server; and the list_changes MCP tool, offered only with --extra-tools."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import anyio
import feedparser
import httpx
import jsonschema
import pytest

from mirror.models import Document
from mirror.service import Mirror
from mirror.store.store import Store

ATOM = "{http://www.w3.org/2005/Atom}"
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
EXT = "documents/developer.chrome.com/docs/extensions/"
A, B, C = EXT + "a", EXT + "b", "documents/web.dev/articles/c"
PAGE = "# Title\n\nIntro text.\n\n## Usage\n\nCall `chrome.storage`.\n"
WARNED = PAGE + "\n{% Aside 'warning' %}\nThis API is deprecated.\n{% endAside %}\n"


# JSON Feed 1.1 (jsonfeed.org/version/1.1): what a reader may rely on.
JSON_FEED = {
    "type": "object",
    "required": ["version", "title", "items"],
    "properties": {
        "version": {"const": "https://jsonfeed.org/version/1.1"},
        "title": {"type": "string"},
        "home_page_url": {"type": "string", "pattern": "^https?://"},
        "feed_url": {"type": "string", "pattern": "^https?://"},
        "authors": {"type": "array", "items": {"type": "object", "required": ["name"]}},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "anyOf": [{"required": ["content_text"]}, {"required": ["content_html"]}],
                "properties": {
                    "id": {"type": "string"},
                    "url": {"type": "string", "pattern": "^https?://"},
                    "title": {"type": "string"},
                    "content_text": {"type": "string"},
                    "date_published": {"type": "string", "pattern": RFC3339.pattern},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


def page(name: str, content: str) -> Document:
    return Document(name, "https://" + name.removeprefix("documents/"), content, title=name)


@pytest.fixture
def changed(store_mirror: Callable[..., Mirror]) -> Mirror:
    """A store whose log holds: a, b, c added; a given a deprecation warning; c removed."""
    mirror = store_mirror("feeds", offline=True)
    store = Store.open(mirror.settings.db_url)
    try:
        store.put([page(A, PAGE), page(B, PAGE), page(C, PAGE)], fetched_at=1000, upstream="t")
        store.put([page(A, WARNED)], fetched_at=2000, upstream="t")
        store.apply_stream(iter([C]), fetched_at=3000, upstream="snapshot s")
    finally:
        store.close()
    return mirror


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    from mirror.snapshots.lockfile import LockEntry, write_lock

    path = tmp_path / "dk-mirror.lock"
    pinned = [LockEntry(B, f"sha256:{'0' * 64}"), LockEntry(C, f"sha256:{'1' * 64}")]
    path.write_text(write_lock(pinned), encoding="utf-8")
    return path


def get(base: str, path: str) -> httpx.Response:
    return httpx.get(base + path, timeout=10)


def strict_atom(body: bytes) -> list[ET.Element]:
    """RFC 4287's required elements, RFC 3339 dates and unique ids; returns the entries."""
    feed = ET.fromstring(body)
    assert feed.tag == ATOM + "feed"
    for tag in ("id", "title", "updated"):
        assert len(feed.findall(ATOM + tag)) == 1, tag
    assert feed.find(f"{ATOM}link[@rel='self']") is not None
    assert feed.find(f"{ATOM}author/{ATOM}name") is not None  # entries have no author
    dates = [feed.findtext(ATOM + "updated")]
    ids = [feed.findtext(ATOM + "id")]
    entries = feed.findall(ATOM + "entry")
    for entry in entries:
        for tag in ("id", "title", "updated"):
            assert len(entry.findall(ATOM + tag)) == 1, tag
        assert entry.find(f"{ATOM}link[@rel='alternate']") is not None
        ids.append(entry.findtext(ATOM + "id"))
        dates.append(entry.findtext(ATOM + "updated"))
    assert len(set(ids)) == len(ids) and all(i and i.startswith("urn:uuid:") for i in ids)
    for date in dates:
        assert date and RFC3339.match(date), date
        datetime.fromisoformat(date.replace("Z", "+00:00"))
    return entries


def test_the_atom_feed_is_valid_and_links_each_change_to_its_diff(
    changed: Mirror, serve_app: Callable[..., str]
) -> None:
    base = serve_app(changed)
    answer = get(base, "/feeds/changes.atom")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/atom+xml")
    entries = strict_atom(answer.content)
    parsed = feedparser.parse(answer.content)
    assert not parsed.bozo, parsed.get("bozo_exception")
    titles = [e.title for e in parsed.entries]
    assert titles == [
        "removed: web.dev/articles/c",
        "changed: developer.chrome.com/docs/extensions/a",
        "added: web.dev/articles/c",
        "added: developer.chrome.com/docs/extensions/b",
        "added: developer.chrome.com/docs/extensions/a",
    ]
    warned = parsed.entries[1]
    assert "deprecation notice added" in warned.summary
    assert {t.term for t in warned.tags} == {"signal", "text", "changed"}
    diff = httpx.URL(warned.link)
    assert diff.path == "/history/developer.chrome.com/docs/extensions/a"
    assert set(diff.params) == {"from", "to"} and len(diff.params["to"]) == 12
    assert warned.updated == "1970-01-01T00:33:20.000Z"  # observed at 2000 s
    # The same request gives the same bytes (ids and dates come from the log, not the clock).
    assert get(base, "/feeds/changes.atom").content == answer.content
    assert len(entries) == 5


def test_the_json_feed_is_valid_and_carries_each_event(
    changed: Mirror, serve_app: Callable[..., str]
) -> None:
    base = serve_app(changed)
    answer = get(base, "/feeds/changes.json?limit=2")
    assert answer.headers["content-type"].startswith("application/feed+json")
    data = answer.json()
    # feedparser 6 reads no JSON Feed: JSON Feed 1.1's required members and types instead.
    jsonschema.validate(data, JSON_FEED)
    assert data["version"] == "https://jsonfeed.org/version/1.1"
    assert [i["title"] for i in data["items"]] == [
        "removed: web.dev/articles/c", "changed: developer.chrome.com/docs/extensions/a"]  # fmt: skip
    event = data["items"][1]["_dk_mirror"]
    assert event["kind"] == "changed" and event["classes"] == ["signal", "text"]
    assert event["diffCommand"].startswith(f"dk-mirror diff {A} --from ")
    assert all(RFC3339.match(i["date_published"]) for i in data["items"])


def test_prefix_kind_and_lock_narrow_the_feeds(
    changed: Mirror, serve_app: Callable[..., str], lock_file: Path
) -> None:
    lock_id, names = changed.feed_lock(lock_file)
    base = serve_app(changed, feed_locks=((lock_id, names),))

    def titles(query: str) -> list[str]:
        answer = get(base, "/feeds/changes.json?" + query)
        assert answer.status_code == 200, answer.text
        return [i["title"] for i in answer.json()["items"]]

    assert titles("prefix=developer.chrome.com/docs/extensions/&kind=added") == [
        "added: developer.chrome.com/docs/extensions/b",
        "added: developer.chrome.com/docs/extensions/a",
    ]
    assert titles("kind=signal") == ["changed: developer.chrome.com/docs/extensions/a"]
    assert titles(f"lock={lock_id}") == [
        "removed: web.dev/articles/c", "added: web.dev/articles/c",
        "added: developer.chrome.com/docs/extensions/b"]  # fmt: skip
    atom = get(base, f"/feeds/changes.atom?lock={lock_id}&kind=removed")
    assert [e.title for e in feedparser.parse(atom.content).entries] == [
        "removed: web.dev/articles/c"]  # fmt: skip


@pytest.mark.parametrize(
    ("query", "status", "said"),
    [
        ("kind=renamed", 400, "unknown change kind 'renamed'"),
        ("limit=0", 400, "limit='0' is not a number from 1 to 500"),
        ("since=7d", 400, "unknown feed parameter 'since'"),
        ("lock=0123456789abcdef", 404, "serve --feed-lock FILE"),
    ],
)
def test_a_bad_feed_query_is_a_clear_error(
    changed: Mirror, serve_app: Callable[..., str], query: str, status: int, said: str
) -> None:
    answer = get(serve_app(changed), "/feeds/changes.atom?" + query)
    assert answer.status_code == status
    assert said in answer.json()["error"]["message"]


def _tools(mirror: Mirror, **options: Any) -> tuple[dict[str, Any], Any]:
    from mcp import Client

    from mirror.serve import ServeOptions
    from mirror.serve.mcp_server import build_server

    server = build_server(mirror, ServeOptions(**options))

    async def main() -> tuple[dict[str, Any], Any]:
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            if "list_changes" not in listed:
                return listed, None
            return listed, await client.call_tool(
                "list_changes", {"since": "1", "prefix": EXT, "limit": 5}
            )

    return anyio.run(main)


def test_list_changes_is_offered_only_with_extra_tools(changed: Mirror) -> None:
    listed, _ = _tools(changed)
    assert sorted(listed) == ["answer_query", "get_documents", "search_documents"]
    listed, result = _tools(changed, extra_tools=True)
    assert sorted(listed) == ["answer_query", "get_documents", "list_changes", "search_documents"]
    assert listed["list_changes"].annotations.read_only_hint
    assert not result.is_error, result.content[0].text
    changes = result.structured_content["changes"]
    # After event 1 (a added), under the extensions prefix: b added, a changed.
    assert [(c["kind"], c["name"]) for c in changes] == [("changed", A), ("added", B)]
    assert changes[0]["summary"].startswith("deprecation notice added")
