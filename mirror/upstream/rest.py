"""The REST v1 client: documents.get and documents.batchGet over httpx."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import ProtocolError
from ..models import Document, View
from .base import HttpUpstream, batch_of, check_order, parse_document
from .http_errors import raise_for_response

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
        data = self._get_json("batchGet", "documents:batchGet", params, what=what, names=wanted)
        docs = data.get("documents") if isinstance(data, dict) else None
        if not isinstance(docs, list):
            raise ProtocolError(f"{what}: the answer has no `documents` list")
        return check_order(wanted, [parse_document(d, what) for d in docs], what)

    def get(self, name: str, view: View = View.CONTENT) -> Document:
        """One document by canonical name; NotFound if upstream has none."""
        what = f"get of {name} from {self.label}"
        # The name's slashes are path separators in `{name=documents/**}`; everything else
        # is escaped (a ':' would otherwise read as a custom verb).
        path = quote(name, safe="/")
        data = self._get_json("get", path, [("view", view.value)], what=what, names=[name])
        doc = parse_document(data, what)
        if doc.name != name:
            raise ProtocolError(f"{what}: asked for {name}, got {doc.name}")
        return doc

    def _get_json(
        self, op: str, path: str, params: list[tuple[str, str]], *, what: str, names: Sequence[str]
    ) -> Any:
        url = f"{self.base_url}/v1/{path}"

        def attempt(seconds_left: float) -> Any:
            started = time.monotonic()
            try:
                response = self._client.get(
                    url,
                    params=tuple(params),  # a tuple: covariant, so mypy accepts str values
                    headers=self._headers(),
                    timeout=self._timeout_within(seconds_left),
                )
            except httpx.HTTPError as exc:
                log.debug(
                    "GET %s names=%d failed after %.3f s: %s",
                    op,
                    len(names),
                    time.monotonic() - started,
                    type(exc).__name__,
                )
                raise
            log.debug(
                "GET %s names=%d -> %d in %.3f s",
                op,
                len(names),
                response.status_code,
                time.monotonic() - started,
            )
            raise_for_response(response, what=what, names=names, key=self._key)
            try:
                return response.json()
            except ValueError:
                # A 200 that is not JSON will not improve on a retry: the contract is broken.
                raise ProtocolError(
                    f"{what}: HTTP {response.status_code} but the body is not JSON "
                    f"({response.headers.get('content-type', 'no content-type')})"
                ) from None

        return self._paced_retry(what, attempt)
