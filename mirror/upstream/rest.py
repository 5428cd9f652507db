"""The REST v1 client: documents.get, documents.batchGet, searchDocumentChunks and answerQuery."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import ProtocolError
from ..models import Answer, Document, SearchPage, View
from .base import (
    HttpUpstream,
    batch_of,
    check_filter,
    check_order,
    check_query,
    page_size_of,
    parse_document,
    quoted,
)
from .http_errors import raise_for_response
from .retry import ANSWER_QUOTA, GET_QUOTA, SEARCH_QUOTA, Quota, broken_body

log = logging.getLogger("mirror.upstream")


class RestUpstream(HttpUpstream):
    """Developer Knowledge REST v1 (`{base}/v1/...`), paced and retried."""

    kind = "rest"

    def batch_get(self, names: Sequence[str], view: View = View.CONTENT) -> list[Document]:
        """Documents for at most 20 canonical names, in request order; NotFound if any is absent."""
        wanted = batch_of(names)
        if not wanted:
            return []
        what = f"batchGet of {len(wanted)} document(s) from {self.label}"
        # Repeated `names` params, as the API's query-string encoding of a repeated field.
        params = [("names", n) for n in wanted] + [("view", view.value)]
        data = self._call("GET", "/documents:batchGet", params=params, what=what, names=wanted)
        docs = data.get("documents") if isinstance(data, dict) else None
        if not isinstance(docs, list):
            raise ProtocolError(f"{what}: the answer has no `documents` list")
        return check_order(wanted, [parse_document(d, what) for d in docs], what)

    def get(self, name: str, view: View = View.CONTENT) -> Document:
        """One document by canonical name; NotFound if upstream has none."""
        what = f"get of {name} from {self.label}"
        # The name's slashes are path separators in `{name=documents/**}`; everything else
        # is escaped (a ':' would otherwise read as a custom verb).
        path = "/" + quote(name, safe="/")
        data = self._call("GET", path, params=[("view", view.value)], what=what, names=[name])
        doc = parse_document(data, what)
        if doc.name != name:
            raise ProtocolError(f"{what}: asked for {name}, got {doc.name}")
        return doc

    def search_chunks(
        self,
        query: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        filter: str | None = None,
    ) -> SearchPage:
        """One page of SearchDocumentChunks; pass its `next_page_token` back for the next."""
        params = [("query", check_query(query))]
        size, wanted_filter = page_size_of(page_size), check_filter(filter)
        # Only what was given: upstream's defaults (5 results, no filter) stay upstream's.
        if size is not None:
            params.append(("pageSize", str(size)))
        if page_token:
            params.append(("pageToken", page_token))
        if wanted_filter is not None:
            params.append(("filter", wanted_filter))
        what = f"search for {quoted(query)} from {self.label}"
        data = self._call(
            "GET", "/documents:searchDocumentChunks", params=params, what=what, quota=SEARCH_QUOTA
        )
        try:
            return SearchPage.from_api(data)
        except ProtocolError as exc:
            raise ProtocolError(f"{what}: {exc.message}") from None

    def answer_query(self, query: str, *, filter: str | None = None) -> Answer:
        """A grounded answer with its citations and the chunks it cites."""
        body = {"query": check_query(query)}
        wanted_filter = check_filter(filter)
        # Older servers know only `query`; a field they do not know is a 400, so send it
        # only when there is a filter to send.
        if wanted_filter is not None:
            body["filter"] = wanted_filter
        what = f"answer to {quoted(query)} from {self.label}"
        data = self._call("POST", ":answerQuery", json=body, what=what, quota=ANSWER_QUOTA)
        try:
            return Answer.from_api(data)
        except ProtocolError as exc:
            raise ProtocolError(f"{what}: {exc.message}") from None

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: list[tuple[str, str]] | None = None,
        json: dict[str, Any] | None = None,
        what: str,
        names: Sequence[str] = (),
        quota: Quota = GET_QUOTA,
    ) -> Any:
        """The JSON answer to `method {base}/v1{path}`, paced, retried and error-mapped."""
        url = f"{self.base_url}/v1{path}"
        op = path.rsplit(":", 1)[-1] if ":" in path else "get"

        def attempt(seconds_left: float) -> Any:
            started = time.monotonic()
            try:
                response = self._client.request(
                    method,
                    url,
                    params=tuple(params or ()),  # a tuple: covariant, so mypy accepts str values
                    json=json,
                    headers=self._headers(),
                    timeout=self._timeout_within(seconds_left),
                )
            except httpx.HTTPError as exc:
                log.debug(
                    "%s %s names=%d failed after %.3f s: %s",
                    method,
                    op,
                    len(names),
                    time.monotonic() - started,
                    type(exc).__name__,
                )
                raise
            log.debug(
                "%s %s names=%d -> %d in %.3f s",
                method,
                op,
                len(names),
                response.status_code,
                time.monotonic() - started,
            )
            raise_for_response(response, what=what, names=names, key=self._key)
            try:
                return response.json()
            except ValueError:
                # Cut short or garbled on the way (a proxy, a dropped stream): try again.
                raise broken_body(
                    what,
                    f"HTTP {response.status_code} but the body is not JSON "
                    f"({len(response.content)} bytes, "
                    f"{response.headers.get('content-type', 'no content-type')})",
                ) from None

        return self._paced_retry(what, attempt, quota)
