"""The offline docs browser: server-rendered pages over `Mirror`, no JavaScript, no CDN.

`web_routes(mirror, WebOptions(...))` returns the routes; `serve/app.py` builds the options
from its ServeOptions and mounts them at `/`. Every handler is a plain function (Starlette
runs it in its thread pool, as Mirror calls block).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ... import names as naming
from ...errors import IndexRebuilding, InvalidInput, MirrorError, NotCached, NotFound
from ...policy import Mode
from ...render import links as web_links
from ...render import markdown_html as web_markdown
from ...render import sanitize as web_sanitize
from ...search.snippets import plain_text, plain_title
from ..api_errors import served, status_of
from . import change_pages
from . import nav as web_nav
from . import views as web_views
from .pages import PAGE_HEADERS, STATIC_DIR, page

if TYPE_CHECKING:
    from ...service import Mirror

# More candidate names than this in one page are not looked up (the rest count as missing).
MAX_LINK_LOOKUP = 2000
# Type-ahead results per keystroke: what fits on a screen (the caller may ask for fewer).
TYPEAHEAD_LIMIT = 12
# How long the set of mirrored hosts is reused between pages (it only matters for marking).
HOSTS_TTL = 30.0


@dataclass(frozen=True, slots=True)
class WebOptions:
    """How the browser may behave; the default never contacts upstream."""

    allow_fetch: bool = False  # pages may fetch misses (documents, search) from upstream
    page_size: int = 10  # search results per page
    # The caching mode of every page's request: the server's (ServeOptions.request_mode);
    # by default, the store only unless fetching is allowed.
    mode: Mode | None = None


def web_routes(mirror: Mirror, options: WebOptions) -> list[BaseRoute]:
    """The browser's routes: /, /browse/, /doc/{name}, /history/{name}, /search, /changes,
    /status and /static."""
    pages = _Pages(mirror, options)
    return [
        Route("/", pages.home, methods=["GET", "HEAD"], name="web_home"),
        Route("/browse", pages.browse_root, methods=["GET", "HEAD"]),
        Route("/browse/{path:path}", pages.browse, methods=["GET", "HEAD"], name="web_browse"),
        Route("/doc/{name:path}", pages.document, methods=["GET", "HEAD"], name="web_doc"),
        Route("/search", pages.search, methods=["GET", "HEAD"], name="web_search"),
        Route("/typeahead", pages.typeahead, methods=["GET", "HEAD"], name="web_typeahead"),
        Route("/tree.json", pages.tree, methods=["GET", "HEAD"], name="web_tree"),
        Route("/status", pages.status, methods=["GET", "HEAD"], name="web_status"),
        Route("/history/{name:path}", pages.history, methods=["GET", "HEAD"], name="web_history"),
        Route("/changes", pages.changes, methods=["GET", "HEAD"], name="web_changes"),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="web_static"),
    ]


def _errors(
    handler: Callable[[_Pages, Request], Response],
) -> Callable[[_Pages, Request], Response]:
    """Turn a MirrorError into an error page with the status REST and MCP give it too."""

    def wrapped(self: _Pages, request: Request) -> Response:
        try:
            return handler(self, request)
        except MirrorError as exc:
            status, _code = status_of(exc)
            # What REST and MCP tell a caller too (no key, no upstream URL, no setting names).
            message, hint = served(exc, secret=self.mirror.settings.api_key)
            shown = MirrorError(message, hint=hint)
            response = page("error.html", status, code=status, error=shown)
            if isinstance(exc, IndexRebuilding):
                response.headers["Retry-After"] = str(exc.retry_after)
            return response

    return wrapped


class _Pages:
    def __init__(self, mirror: Mirror, options: WebOptions) -> None:
        self.mirror = mirror
        self.options = options
        self._hosts: tuple[float, frozenset[str]] | None = None
        self._lock = threading.Lock()

    def _mode(self) -> Mode:
        return self.options.mode or Mode(offline=not self.options.allow_fetch)

    def mirrored_hosts(self) -> frozenset[str]:
        """Hosts with at least one mirrored document (cached for a few seconds)."""
        with self._lock:
            now = time.monotonic()
            if self._hosts is None or now - self._hosts[0] > HOSTS_TTL:
                self._hosts = (now, frozenset(self.mirror.stats().by_data_source))
            return self._hosts[1]

    @_errors
    def home(self, request: Request) -> Response:
        stats = self.mirror.stats()
        sources = [(src, n, _browse_url(src)) for src, n in sorted(stats.by_data_source.items())]
        return page(
            "home.html", stats=stats, sources=sources, now=self.mirror.clock(), section="home"
        )

    def browse_root(self, request: Request) -> Response:
        return RedirectResponse("/browse/", status_code=308)

    @_errors
    def browse(self, request: Request) -> Response:
        path = str(request.path_params.get("path", "")).strip("/")
        prefix = naming.PREFIX
        if path:
            try:
                prefix = naming.normalize(path) + "/"
            except InvalidInput:
                return self._not_found(request, path, "that is not a folder of document names")
        found = web_views.listing(prefix, self.mirror.list_documents(prefix.rstrip("/")))
        status = 200 if found.total or found.own_page or prefix == naming.PREFIX else 404
        return page(
            "browse.html",
            status,
            listing=found,
            crumbs=web_views.crumbs(prefix),
            now=self.mirror.clock(),
            section="browse",
        )

    @_errors
    def document(self, request: Request) -> Response:
        raw = str(request.path_params.get("name", ""))
        try:
            name = naming.normalize(raw)
        except InvalidInput as exc:
            return self._not_found(request, raw, exc.message)
        if raw != name[len(naming.PREFIX) :]:
            # One URL per document: trailing slashes, `documents/` or a scheme redirect.
            return RedirectResponse(web_links.doc_path(name), status_code=308)
        try:
            result = self.mirror.get_documents([name], self._mode())
        except (NotCached, NotFound):
            return self._not_found(request, name, None)
        doc, served = result.documents[0], result.served[0]
        # Relative links resolve against the page's address, and only a web address will do.
        base_uri = doc.uri if web_links.is_web_url(doc.uri) else naming.uri_of(name)
        markup, toc = web_markdown.render_with_toc(
            web_markdown.without_title(doc.content or "", doc.title)
        )
        body = web_sanitize.parse(markup)
        # One batched lookup answers "is it mirrored?" for every link on the page.
        wanted = web_links.all_candidates(body.hrefs, base_uri)[:MAX_LINK_LOOKUP]
        existing = self.mirror.cached_names(wanted)
        hosts = self.mirrored_hosts()
        html = body.render(
            lambda href: web_links.classify(href, base_uri, existing, hosts, current=name)
        )
        parent = name.rsplit("/", 1)[0] + "/"
        # A big store's first outline is built in the background: until then, no tree.
        outline = self.mirror.outline(wait=None)
        before, after = web_nav.neighbours(outline.tree, name) if outline else (None, None)
        return page(
            "doc.html",
            tree=web_nav.tree_for(outline.tree, name) if outline else [],
            # Only headings whose id survived the sanitiser: every entry must lead somewhere.
            toc=[entry for entry in toc if f' id="{entry[1]}"' in html],
            before=before,
            after=after,
            doc=doc,
            description=plain_text(doc.description or ""),
            served=served,
            warnings=result.warnings,
            content_html=html,
            has_content=doc.content is not None,
            folder_url=web_views.browse_path(parent),
            crumbs=web_views.crumbs(parent),
            now=self.mirror.clock(),
            section="browse",
        )

    @_errors
    def search(self, request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        token = request.query_params.get("page") or None
        if not q:
            return page("search.html", q="", result=None, hits=[], section="search")
        try:
            result = self.mirror.search_documents(
                q, page_size=self.options.page_size, page_token=token, mode=self._mode()
            )
        except InvalidInput as exc:
            return page("search.html", 400, q=q, result=None, hits=[], error=exc)
        parents = list(dict.fromkeys(chunk.parent for chunk in result.page.results))
        mirrored = self.mirror.cached_names(parents)
        chunks = result.page.results
        snippets = self.mirror.snippets(
            q, [chunk.content for chunk in chunks], [chunk.parent for chunk in chunks]
        )
        hits = [
            {
                "name": chunk.parent,
                "title": plain_title(chunk.document.title or "" if chunk.document else "")
                or chunk.parent[len(naming.PREFIX) :],
                "url": web_links.doc_path(chunk.parent)
                if chunk.parent in mirrored
                else naming.uri_of(chunk.parent),
                "mirrored": chunk.parent in mirrored,
                "snippet": snippet,
                "source": chunk.source or result.source,
                "data_source": (chunk.document.data_source if chunk.document else None)
                or naming.uri_of(chunk.parent).split("/")[2],
            }
            for chunk, snippet in zip(result.page.results, snippets, strict=True)
        ]
        # Local results come grouped by page (its best chunks in a row): a page's second
        # chunk is shown under the first, without repeating its title.
        for before, hit in zip([None, *hits], hits, strict=False):
            hit["continued"] = before is not None and before["name"] == hit["name"]
        token_next = result.page.next_page_token
        return page(
            "search.html",
            q=q,
            result=result,
            hits=hits,
            next_url="/search?" + urlencode({"q": q, "page": token_next}) if token_next else None,
            first_url="/search?" + urlencode({"q": q}) if token else None,
            section="search",
        )

    def typeahead(self, request: Request) -> Response:
        """JSON for the search box: what matches the text typed so far (the store only)."""
        start = time.perf_counter()
        q = request.query_params.get("q", "")[:200]
        try:
            limit = min(max(int(request.query_params.get("limit", TYPEAHEAD_LIMIT)), 1), 50)
        except ValueError:
            limit = TYPEAHEAD_LIMIT
        try:
            found = self.mirror.typeahead(q, limit)
        except MirrorError as exc:
            status, _code = status_of(exc)
            message, _hint = served(exc, secret=self.mirror.settings.api_key)
            return JSONResponse({"error": message}, status, headers=PAGE_HEADERS)
        results = [
            {
                "kind": s.kind,
                "label": s.label,
                "context": s.context,
                "url": web_links.doc_path(s.name) + (f"#{s.anchor}" if s.anchor else ""),
            }
            for s in found
        ]
        body = {"query": q, "count": len(results), "results": results}
        response = JSONResponse(body, headers=PAGE_HEADERS)
        # The server's own time per keystroke, as browsers' developer tools show it (and
        # bench_typeahead reads it): lookup, full text and JSON, without the network.
        elapsed = (time.perf_counter() - start) * 1000
        response.headers["Server-Timing"] = f"typeahead;dur={elapsed:.2f}"
        return response

    def tree(self, request: Request) -> Response:
        """JSON of one folder of the navigation tree, for opening it in place."""
        prefix = request.query_params.get("prefix", "")
        outline = self.mirror.outline(wait=None)
        if outline is None:
            body = {"error": "the page tree is still being built; try again in a few seconds"}
            return JSONResponse(body, 503, headers={**PAGE_HEADERS, "Retry-After": "5"})
        try:
            found = web_nav.folder_json(outline.tree, naming.normalize(prefix) + "/")
        except InvalidInput:
            found = None
        if found is None:
            return JSONResponse({"error": "no such folder"}, 404, headers=PAGE_HEADERS)
        return JSONResponse(found, headers=PAGE_HEADERS)

    @_errors
    def history(self, request: Request) -> Response:
        raw = str(request.path_params.get("name", ""))
        try:
            name = naming.normalize(raw)
        except InvalidInput as exc:
            return self._not_found(request, raw, exc.message)
        try:
            versions = self.mirror.history(name)
        except InvalidInput:  # not in the store, or known from search results only
            return self._not_found(request, name, None)
        query = request.query_params
        return change_pages.history_page(
            self.mirror, versions, query.get("from") or None, query.get("to") or None
        )

    @_errors
    def changes(self, request: Request) -> Response:
        query = request.query_params
        return change_pages.changes_page(
            self.mirror, query.get("prefix", ""), query.get("kind", ""), query.get("days")
        )

    @_errors
    def status(self, request: Request) -> Response:
        now = self.mirror.clock()
        health = self.mirror.health()
        # One listing feeds both charts (a store may hold a hundred thousand documents).
        summaries = list(self.mirror.list_documents())
        ages = web_views.age_buckets(summaries, now)
        store = health.store
        info = [
            ("Store", store.url),
            ("Database", store.dialect),
            *([("SQLite library", health.sqlite_version)] if store.dialect == "sqlite" else []),
            ("Journal mode", store.journal_mode or "—"),
            ("Schema revision", store.revision or "—"),
            ("Local search index", "yes" if store.search_index else "no"),
            ("Upstream", _public_url(health.upstream) + f" ({health.transport})"),
            ("API key", "configured" if health.api_key_set else "not configured"),
            ("Offline mode", "on" if health.offline else "off"),
            ("Browser may fetch", "yes" if self.options.allow_fetch else "no (offline only)"),
        ]
        return page(
            "status.html",
            stats=health.stats,
            ages=ages,
            buckets=[label for label, _ in web_views.AGE_BUCKETS],
            chart=web_views.age_chart(ages),
            **change_pages.freshness_context(self.mirror, summaries, now),
            info=info,
            now=now,
            section="status",
        )

    def _not_found(self, request: Request, wanted: str, reason: str | None) -> Response:
        nearest = self.mirror.suggest_names(wanted, limit=10) if reason is None else []
        return page(
            "not_found.html",
            404,
            wanted=wanted,
            reason=reason,
            nearest=nearest,
            allow_fetch=self.options.allow_fetch,
            section="",
        )


def _browse_url(source: str) -> str | None:
    try:
        return web_views.browse_path(naming.normalize(source) + "/")
    except InvalidInput:
        return None


def _public_url(url: str) -> str:
    """`url` without any userinfo, query or fragment (which could hold a secret)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
