"""Recorded upstream searches and answers, metadata seen in search results, and quota counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, select, text, update

from ...canonical import canonical_json
from ...models import Answer, Document, SearchPage
from ..db import sql
from ..db.rows import document_row, upsert
from ..schema.recordings import answers, quota_usage, search_pages
from ..schema.tables import documents
from .recorded import RecordedAnswer, RecordedPage, recorded_answer, recorded_page


class Recordings:
    """Reads and writes the recording tables; writes take the store's write transaction."""

    def __init__(self, engine: Engine, writer: Callable[[], Connection]) -> None:
        self.engine = engine
        self._writer = writer
        dialect = engine.dialect.name
        self._page_upsert = upsert(dialect, search_pages, ["key"])
        self._answer_upsert = upsert(dialect, answers, ["key"])

    def save_page(
        self, key: str, request: dict[str, Any], page: SearchPage, *, at: float, upstream: str
    ) -> None:
        """Record one upstream search page under its request key."""
        with self._writer() as conn, conn.begin():
            conn.execute(
                self._page_upsert,
                {
                    "key": key,
                    "query": request["query"],
                    "filter": request.get("filter"),
                    "page_size": request["page_size"],
                    "page_token": request.get("page_token"),
                    "response_json": canonical_json(page.to_api()),
                    "upstream": upstream,
                    "recorded_at": at,
                },
            )

    def page(self, key: str) -> RecordedPage | None:
        """The recorded page for a request key, if any."""
        with self.engine.connect() as conn:
            return recorded_page(conn.execute(text(sql.RECORDED_PAGE), {"key": key}).first())

    def save_answer(
        self,
        key: str,
        request: dict[str, Any],
        answer: Answer,
        cited: dict[str, str | None],
        *,
        at: float,
        upstream: str,
    ) -> None:
        """Record an answer with the content hashes of the documents it cites."""
        with self._writer() as conn, conn.begin():
            conn.execute(
                self._answer_upsert,
                {
                    "key": key,
                    "query": request["query"],
                    "filter": request.get("filter"),
                    "answer_json": canonical_json(answer.to_api()),
                    "references_json": canonical_json(
                        [{"name": n, "sha256": h} for n, h in cited.items()]
                    ),
                    "upstream": upstream,
                    "recorded_at": at,
                },
            )

    def answer(self, key: str) -> RecordedAnswer | None:
        """The recorded answer for a request key, if any."""
        with self.engine.connect() as conn:
            return recorded_answer(conn.execute(text(sql.RECORDED_ANSWER), {"key": key}).first())

    def take_quota(self, bucket: str, period: str, limit: int) -> int | None:
        """Count one call if it fits under `limit`; returns the new count, or None if refused.

        Check and increment happen in one write transaction, so two processes sharing the
        store cannot both take the last call.
        """
        with self._writer() as conn, conn.begin():
            used = conn.execute(
                select(quota_usage.c.used).where(
                    quota_usage.c.bucket == bucket, quota_usage.c.period == period
                )
            ).scalar()
            if used is None:
                if limit < 1:
                    return None
                conn.execute(quota_usage.insert().values(bucket=bucket, period=period, used=1))
                return 1
            if used >= limit:
                return None
            conn.execute(
                update(quota_usage)
                .where(quota_usage.c.bucket == bucket, quota_usage.c.period == period)
                .values(used=used + 1)
            )
            return int(used) + 1

    def note_metadata(self, docs: Sequence[Document], *, at: float, upstream: str) -> None:
        """Keep metadata seen in search results: new names get a metadata-only row; cached
        ones whose upstream `updateTime` is newer are marked stale via `seen_update_time`."""
        from ...policy import newer

        if not docs:
            return
        by_name = {d.name: d for d in docs}
        with self._writer() as conn, conn.begin():
            known = {
                name: (update_time, seen)
                for name, update_time, seen in conn.execute(
                    select(
                        documents.c.name, documents.c.update_time, documents.c.seen_update_time
                    ).where(documents.c.name.in_(list(by_name)))
                )
            }
            fresh_rows = []
            for name, doc in by_name.items():
                if name not in known:
                    fresh_rows.append(document_row(doc.basic(), at, upstream))
                    continue
                stored, seen = known[name]
                if newer(doc.update_time, stored) and newer(doc.update_time, seen or stored):
                    conn.execute(
                        update(documents)
                        .where(documents.c.name == name)
                        .values(seen_update_time=doc.update_time)
                    )
            if fresh_rows:
                conn.execute(documents.insert(), fresh_rows)
