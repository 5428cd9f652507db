"""As-of reads: which version of each document the store held at a past instant, from the kept
history (versions.py records a version row each time a name's content changes, stamped with
when that content was first fetched).

The version current at `at` is the newest one first fetched at or before it. A name whose
kept versions all came later is either not yet observed then (its first version is kept) or
pruned (its first versions were dropped by retention, so what it held then is unknown): the
two are told apart, so a reader is never handed a newer copy in place of a pruned one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Select, and_, func, select

from ...models import AsOf, Observed, Version
from ..db.rows import stored_document
from ..schema.tables import documents
from ..schema.versions import document_versions, version_contents
from .versions import in_batches

_V = document_versions.c
_D = documents.c
_META = (_V.uri, _V.title, _V.description, _V.data_source, _V.update_time,
         _V.content_length_bytes, _V.extra_json)  # fmt: skip


def _scopes(
    names: Sequence[str] | None, prefix: str | None, data_source: str | None
) -> Iterable[list[Any]]:
    """WHERE conditions on document_versions, one list per query (names go in batches)."""
    common: list[Any] = []
    if prefix:
        common += [_V.name >= prefix, _V.name < prefix + "\U0010ffff"]
    if data_source:
        common.append(_V.data_source == data_source)
    if names is None:
        yield common
        return
    for part in in_batches(sorted(set(names))):
        yield [*common, _V.name.in_(part)]


def read(
    conn: Connection,
    at: float,
    *,
    names: Sequence[str] | None = None,
    prefix: str | None = None,
    data_source: str | None = None,
    content: bool = False,
    limit: int | None = None,
) -> AsOf:
    """The documents (of `names`, under `prefix`, of `data_source`) as the store held them at
    `at`, in name order (at most `limit`), and the names whose version of then was pruned."""
    observed: list[Observed] = []
    pruned: list[str] = []
    for where in _scopes(names, prefix, data_source):
        query = _then(at, where)
        if limit is not None:
            query = query.limit(limit - len(observed))
        rows = conn.execute(query).all()
        found = [_observed(row) for row in rows]
        if content and found:
            found = _with_content(conn, found)
        observed.extend(found)
        # Every kept version came after `at`, and the first ones are gone: unknown then.
        later = (
            select(_V.name)
            .where(*where)
            .group_by(_V.name)
            .having(func.min(_V.version) > 1, func.min(_V.fetched_at) > at)
        )
        pruned.extend(conn.execute(later).scalars())
        if limit is not None and len(observed) >= limit:
            break
    observed.sort(key=lambda o: o.version.name)
    return AsOf(observed, sorted(pruned))


def _then(at: float, where: list[Any]) -> Select[Any]:
    """Each name's newest version first fetched at or before `at`, with the current hash."""
    newest = (
        select(_V.name, func.max(_V.version).label("v"))
        .where(_V.fetched_at <= at, *where)
        .group_by(_V.name)
        .subquery()
    )
    return (
        select(_V.name, _V.version, _V.sha256, _V.fetched_at, _V.upstream, *_META,
               _D.content_sha256)
        .join(newest, and_(newest.c.name == _V.name, newest.c.v == _V.version))
        .outerjoin(documents, _D.name == _V.name)
        .order_by(_V.name)
    )  # fmt: skip


def _observed(row: Any) -> Observed:
    name, number, sha, fetched_at, upstream = row[:5]
    uri, title, description, data_source, update_time, length, extra_json = row[5:12]
    current = row[12] == sha
    version = Version(name, number, sha, update_time, fetched_at, upstream, current)
    doc = stored_document(
        name, uri, title, description, data_source, update_time, length, None, extra_json
    )
    return Observed(version, doc)


def _with_content(conn: Connection, found: list[Observed]) -> list[Observed]:
    """`found` with each version's Markdown: the current one's from `documents`, a superseded
    one's from `version_contents` (stored once per hash)."""
    texts: dict[str, str] = {}  # by sha256
    current = [o.version.name for o in found if o.version.current]
    for part in in_batches(current):
        query = select(_D.content_sha256, _D.content).where(_D.name.in_(part))
        texts.update((sha, text) for sha, text in conn.execute(query) if text is not None)
    older = sorted({o.version.sha256 for o in found if o.version.sha256 not in texts})
    for part in in_batches(older):
        c = version_contents.c
        texts.update(conn.execute(select(c.sha256, c.content).where(c.sha256.in_(part))).all())
    out = []
    for o in found:
        text = texts.get(o.version.sha256)
        if text is not None:  # a version row always has its content; never guess one
            out.append(Observed(o.version, replace(o.document, content=text)))
    return out
