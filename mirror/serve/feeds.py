"""The change log as feeds: GET /feeds/changes.atom and /feeds/changes.json.

Query parameters: `prefix` (any name form), `kind` (added, changed, removed, or a class:
signal, structure, code, text, cosmetic), `lock` (the id of a lock file registered with
`serve --feed-lock FILE`: only the pages it pins), `limit` (entries, default 50, at most 500).
Entries link to the change's diff in the docs browser at this server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..changes import feed
from ..changes.events import ChangeEvent, ChangeFilter
from ..errors import InvalidInput
from . import api_errors
from .rest_api import error_response

if TYPE_CHECKING:
    from ..service import Mirror
    from .options import ServeOptions

DEFAULT_ENTRIES = 50
MAX_ENTRIES = 500
_PARAMS = frozenset({"prefix", "kind", "lock", "limit"})


def feed_routes(mirror: Mirror, options: ServeOptions) -> list[BaseRoute]:
    """The two feed routes over `mirror`'s change log."""
    feeds = _Feeds(mirror, options)
    return [
        Route("/feeds/changes.atom", feeds.atom, methods=["GET", "HEAD"]),
        Route("/feeds/changes.json", feeds.json_feed, methods=["GET", "HEAD"]),
    ]


class _Feeds:
    def __init__(self, mirror: Mirror, options: ServeOptions) -> None:
        self.mirror = mirror
        self.locks = dict(options.feed_locks)

    async def atom(self, request: Request) -> Response:
        return await self._answer(request, _atom)

    async def json_feed(self, request: Request) -> Response:
        return await self._answer(request, _json_feed)

    async def _answer(self, request: Request, render: Render) -> Response:
        lock = request.query_params.get("lock")
        if lock and lock not in self.locks:
            message = (
                f"no lock file with id {lock[:40]!r} is registered with this server; start it "
                "with `dk-mirror serve --feed-lock FILE` (its log prints each id)"
            )
            return error_response(api_errors.make(404, message))
        try:
            wanted = self._filter(request)
            events = await run_in_threadpool(
                lambda: self.mirror.list_changes(
                    prefix=wanted.prefix,
                    kind=wanted.kind,
                    names=wanted.names,
                    limit=wanted.limit,
                )
            )
        except Exception as exc:  # a bad parameter or a store failure: a Google-style error
            return error_response(
                api_errors.from_exception(exc, secret=self.mirror.settings.api_key)
            )
        site = f"{request.url.scheme}://{request.url.netloc}/"
        body, media_type = render(events, feed.FeedInfo(_title(wanted), str(request.url), site))
        return Response(body, media_type=media_type)

    def _filter(self, request: Request) -> ChangeFilter:
        query = request.query_params
        unknown = sorted(set(query) - _PARAMS)
        if unknown:
            raise InvalidInput(
                f"unknown feed parameter {unknown[0]!r}",
                hint=f"use {', '.join(sorted(_PARAMS))}",
            )
        lock = query.get("lock")
        names = self.locks[lock] if lock else None  # an unknown id was answered 404 already
        return ChangeFilter(
            prefix=query.get("prefix") or None,
            kind=query.get("kind") or None,
            names=names,
            limit=_limit(query.get("limit")),
        )


# A feed's bytes and media type, from its events and what it says about itself.
Render = Callable[[list[ChangeEvent], feed.FeedInfo], tuple[bytes, str]]


def _atom(events: list[ChangeEvent], info: feed.FeedInfo) -> tuple[bytes, str]:
    return feed.atom(events, info), feed.ATOM_TYPE


def _json_feed(events: list[ChangeEvent], info: feed.FeedInfo) -> tuple[bytes, str]:
    body = json.dumps(feed.json_feed(events, info), ensure_ascii=False).encode()
    return body, feed.JSON_FEED_TYPE


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_ENTRIES
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_ENTRIES:
        raise InvalidInput(f"limit={raw[:20]!r} is not a number from 1 to {MAX_ENTRIES}")
    return int(raw)


def _title(wanted: ChangeFilter) -> str:
    parts = [p for p in (wanted.prefix, wanted.kind) if p]
    return "dk-mirror changes" + (f" ({', '.join(parts)})" if parts else "")
