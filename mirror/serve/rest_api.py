"""REST v1 (and v1alpha) with Google's paths, parameters, JSON and error bodies, over the mirror.

    GET  /v1/documents/{name=**}?view=                 Document
    GET  /v1/documents:batchGet?names=...&view=        {"documents": [...]} in request order
    GET  /v1/documents:searchDocumentChunks?query&pageSize&pageToken&filter
    POST /v1:answerQuery  {"query", "filter"}          {"answer": {...}}

`key`, `X-Goog-Api-Key` and the other system parameters (`alt`, `prettyPrint`, `fields`, ...)
are accepted and ignored: the mirror has its own auth (security.py) and returns whole messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..errors import InvalidInput
from ..models import Document, View
from . import api_errors, calls, provenance
from .options import ServeOptions

if TYPE_CHECKING:
    from ..service import Mirror
    from .answer_cache import AnswerCache

VERSIONS = ("v1", "v1alpha")
JSON_TYPE = "application/json; charset=UTF-8"
# DocumentView by enum name or number; UNSPECIFIED means the method's default (CONTENT).
_VIEWS = {
    "DOCUMENT_VIEW_UNSPECIFIED": View.CONTENT,
    "DOCUMENT_VIEW_BASIC": View.BASIC,
    "DOCUMENT_VIEW_FULL": View.FULL,
    "DOCUMENT_VIEW_CONTENT": View.CONTENT,
    "0": View.CONTENT,
    "1": View.BASIC,
    "2": View.FULL,
    "3": View.CONTENT,
}
_ANSWER_FIELDS = frozenset({"query", "filter"})
ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def rest_routes(
    mirror: Mirror, options: ServeOptions, cache: AnswerCache | None = None
) -> list[BaseRoute]:
    """Routes for /v1 and /v1alpha (the two versions share one message set); documents come
    from `cache` when it holds them for the store as it is now."""
    api = _RestApi(mirror, options, cache)
    routes: list[BaseRoute] = []
    for version in VERSIONS:
        routes += [
            Route(f"/{version}/documents:batchGet", api.batch_get, methods=["GET"]),
            Route(f"/{version}/documents:searchDocumentChunks", api.search, methods=["GET"]),
            Route(f"/{version}/documents/{{name:path}}", api.get, methods=["GET"]),
            Route(f"/{version}:answerQuery", api.answer, methods=["POST"]),
            # Anything else under the version answers as Google does: a JSON 404.
            Route(f"/{version}/{{rest:path}}", api.unknown, methods=ANY_METHOD),
            Route(f"/{version}:{{verb}}", api.unknown, methods=ANY_METHOD),
        ]
    return routes


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """Compact UTF-8 JSON with Google's content type."""
    return Response(encode(data), status, headers=headers, media_type=JSON_TYPE)


def encode(data: Any) -> bytes:
    """Compact UTF-8 JSON, as upstream sends it."""
    # orjson: a 20-document answer (~230 kB) in 0.5 ms instead of json's 2.8 ms, which had
    # been the largest cost of a batchGet on the event loop (bench/bench_serve.py).
    return orjson.dumps(data)


def documents_body(encoded: Sequence[bytes]) -> bytes:
    """A BatchGetDocumentsResponse from its documents' JSON: the same bytes as encode() of it."""
    return b'{"documents":[' + b",".join(encoded) + b"]}"


def error_response(error: api_errors.ApiError, headers: dict[str, str] | None = None) -> Response:
    """A Google-style error body with its HTTP status (and Retry-After when it says when)."""
    if error.retry_after is not None:
        headers = {**(headers or {}), "Retry-After": str(error.retry_after)}
    return json_response(error.body(), error.status, headers)


def view_of(raw: str | None) -> View:
    """The DocumentView a `view` parameter asks for (CONTENT when absent)."""
    if raw is None or raw == "":
        return View.CONTENT
    view = _VIEWS.get(raw)
    if view is None:
        raise InvalidInput(
            f"Invalid value at 'view' (type.googleapis.com/google.developers.knowledge.v1."
            f'DocumentView), "{raw}"',
            hint="use DOCUMENT_VIEW_BASIC, DOCUMENT_VIEW_CONTENT or DOCUMENT_VIEW_FULL",
        )
    return view


def in_view(doc: Document, view: View) -> dict[str, Any]:
    """A Document's JSON as upstream returns it in `view` (with `view` set, as upstream does)."""
    shown = doc.basic() if view is View.BASIC else replace(doc, view=view.value)
    return shown.to_api()


def page_size_of(raw: str | None) -> int | None:
    """`pageSize` as an int32 (0 or absent: the default); Google's 400 for anything else."""
    if raw is None or raw == "":
        return None
    try:
        size = int(raw)
    except ValueError:
        raise InvalidInput(f"Invalid value at 'page_size' (TYPE_INT32), \"{raw}\"") from None
    if size < 0:
        raise InvalidInput("page_size must not be negative", hint="give a page size from 1 to 100")
    return size or None


class _RestApi:
    """The route handlers; each parses, calls `calls`, and renders JSON."""

    def __init__(self, mirror: Mirror, options: ServeOptions, cache: AnswerCache | None) -> None:
        self.mirror = mirror
        self.options = options
        self.secret = mirror.settings.api_key
        self.cache = cache

    async def _run(self, work: Callable[[], tuple[Any, dict[str, str]]]) -> Response:
        # Mirror calls block (SQLite, upstream HTTP); they run in the thread pool, and so does
        # encoding their answer. `work` returns the answer and its provenance headers.
        def encoded() -> tuple[bytes, dict[str, str]]:
            data, headers = work()
            return encode(data), headers

        try:
            body, headers = await run_in_threadpool(encoded)
        except Exception as exc:
            return error_response(api_errors.from_exception(exc, secret=self.secret))
        return Response(body, headers=headers, media_type=JSON_TYPE)

    async def _documents(
        self, names: list[str], raw_view: str | None
    ) -> tuple[list[bytes], dict[str, str]] | Response:
        """Each document's JSON in `raw_view`, in request order, with the provenance headers;
        or the error answer.

        From the answer cache, on the event loop, when it has every one for the store as it is
        now; else read in the thread pool (and kept for the next request).
        """
        cache, generation = self.cache, None
        as_of = self.mirror.as_of
        if cache is not None:
            generation = cache.generation()
            view = _VIEWS.get(raw_view or "DOCUMENT_VIEW_UNSPECIFIED")
            kept = cache.encoded(names, view, generation) if view is not None else None
            served = cache.served(names, generation) if kept is not None else None
            if kept is not None and served is not None:
                return kept, provenance.document_headers(served, as_of)

        def work() -> tuple[list[bytes], dict[str, str]]:
            view = view_of(raw_view)
            if not names:
                raise InvalidInput("names is required: give at least one document name")
            result = calls.get_documents(self.mirror, self.options, names)
            encoded = [encode(in_view(doc, view)) for doc in result.documents]
            if cache is not None:
                cache.keep(names, result.documents, generation, view, encoded, result.served)
            return encoded, provenance.document_headers(result.served, as_of)

        try:
            return await run_in_threadpool(work)
        except Exception as exc:
            return error_response(api_errors.from_exception(exc, secret=self.secret))

    async def get(self, request: Request) -> Response:
        """GET /v1/documents/{name=**}."""
        name = "documents/" + request.path_params["name"]
        found = await self._documents([name], request.query_params.get("view"))
        if isinstance(found, Response):
            return found
        encoded, headers = found
        return Response(encoded[0], headers=headers, media_type=JSON_TYPE)

    async def batch_get(self, request: Request) -> Response:
        """GET /v1/documents:batchGet?names=...&names=...&view=."""
        found = await self._documents(
            request.query_params.getlist("names"), request.query_params.get("view")
        )
        if isinstance(found, Response):
            return found
        encoded, headers = found
        return Response(documents_body(encoded), headers=headers, media_type=JSON_TYPE)

    async def search(self, request: Request) -> Response:
        """GET /v1/documents:searchDocumentChunks."""
        params = request.query_params

        def work() -> tuple[dict[str, Any], dict[str, str]]:
            result = calls.search_documents(
                self.mirror,
                self.options,
                params.get("query", ""),
                page_size=page_size_of(params.get("pageSize")),
                page_token=params.get("pageToken") or None,
                filter=params.get("filter") or None,
            )
            headers = provenance.page_headers(result.source, result.recorded_at, result.as_of)
            return result.page.to_api(), headers

        return await self._run(work)

    async def answer(self, request: Request) -> Response:
        """POST /v1:answerQuery with an AnswerQueryRequest body."""
        raw = await request.body()

        def work() -> tuple[dict[str, Any], dict[str, str]]:
            query, filter_text = _answer_request(raw)
            result = calls.answer_query(self.mirror, self.options, query, filter=filter_text)
            headers = provenance.page_headers(result.source, result.recorded_at, self.mirror.as_of)
            return result.answer.to_api(), headers

        return await self._run(work)

    async def unknown(self, request: Request) -> Response:
        """Any other method or path under a version prefix: Google's JSON 404."""
        return error_response(
            api_errors.make(404, f"Method not found: {request.method} {request.url.path}")
        )


def _answer_request(raw: bytes) -> tuple[str, str | None]:
    """`query` and `filter` from an AnswerQueryRequest body, refusing what Google refuses."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise InvalidInput("Invalid JSON payload received.") from None
    if not isinstance(data, dict):
        raise InvalidInput("Invalid JSON payload received: the body must be a JSON object.")
    unknown = sorted(set(data) - _ANSWER_FIELDS)
    if unknown:
        raise InvalidInput(
            f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.'
        )
    query, filter_text = data.get("query", ""), data.get("filter")
    if not isinstance(query, str) or (filter_text is not None and not isinstance(filter_text, str)):
        raise InvalidInput("query and filter must be strings")
    return query, filter_text or None
