"""Document history: the one place every write records versions, and the reads of history.

`record` runs inside the writer's transaction, before the `documents` upsert, on every write
path (Store.put, put_stream, apply_stream): a put whose content hash equals the stored one
writes nothing here; a new hash gets a new version row, and the content it supersedes moves to
`version_contents` (once per sha256). Retention (`keep`) bounds the versions of each name
written, dropping content no remaining version needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Connection, and_, case, delete, func, select, update

from ...models import Document, Stamp, Version, content_sha256
from ..db.rows import META_COLUMNS, document_meta, insert_missing, stored_document
from ..schema.tables import documents
from ..schema.versions import document_versions, gone_documents, version_contents

# Names per IN list: well under SQLite's variable limit, large enough to cost little per row.
BATCH = 500
_V = document_versions.c
_D = documents.c
_META = META_COLUMNS


def in_batches(names: Sequence[str]) -> Iterable[list[str]]:
    """`names` in lists of at most BATCH (one IN list each)."""
    for start in range(0, len(names), BATCH):
        yield list(names[start : start + BATCH])


def _latest(conn: Connection, names: Sequence[str]) -> dict[str, tuple[int, str]]:
    """name -> (number, sha256) of each name's newest version."""
    found: dict[str, tuple[int, str]] = {}
    for part in in_batches(names):
        newest = (
            select(_V.name, func.max(_V.version).label("v"))
            .where(_V.name.in_(part))
            .group_by(_V.name)
            .subquery()
        )
        rows = conn.execute(
            select(_V.name, _V.version, _V.sha256).join(
                newest, and_(newest.c.name == _V.name, newest.c.v == _V.version)
            )
        )
        found.update((name, (number, sha)) for name, number, sha in rows)
    return found


def record(
    conn: Connection,
    docs: Sequence[Document],
    fetched_at: float,
    upstream: str,
    keep: int,
    known: Mapping[str, str | None] | None = None,
) -> int:
    """Record the versions `docs` (about to be written) create; returns how many. `known`:
    their content hashes by name, when the caller has them already."""
    incoming = {doc.name: doc for doc in docs}  # the last copy of a name wins, as in the upsert
    names = list(incoming)
    stored: dict[str, str | None] = {}
    for part in in_batches(names):
        query = select(_D.name, _D.content_sha256).where(_D.name.in_(part))
        stored.update((name, sha) for name, sha in conn.execute(query))
    hashes = {
        name: known[name]
        if known is not None and name in known
        else (content_sha256(doc.content) if doc.content is not None else None)
        for name, doc in incoming.items()
    }
    # Stored content about to be replaced (by other content, or by none): keep it.
    superseded = [n for n in names if stored.get(n) is not None and stored[n] != hashes[n]]
    new = [n for n in names if hashes[n] is not None and stored.get(n) != hashes[n]]
    if not superseded and not new:
        return 0  # a put that changes nothing stores nothing
    latest = _latest(conn, list({*superseded, *new}))
    if superseded:
        _archive(conn, superseded, latest)
    rows = []
    for name in new:
        number, sha = latest.get(name, (0, None))
        if sha == hashes[name]:
            continue  # the newest version already has this content (it was archived above)
        rows.append(
            {
                "name": name,
                "version": number + 1,
                "sha256": hashes[name],
                **document_meta(incoming[name]),
                "fetched_at": fetched_at,
                "upstream": upstream,
            }
        )
    if rows:
        conn.execute(document_versions.insert(), rows)
        prune(conn, keep, [r["name"] for r in rows])
    return len(rows)


def retire(conn: Connection, names: Sequence[str]) -> None:
    """`names` are about to be deleted: keep their current content in the history, so a lock
    pinning it can still restore it."""
    held: list[str] = []
    for part in in_batches(names):
        query = select(_D.name).where(_D.name.in_(part), _D.content_sha256.is_not(None))
        held.extend(conn.execute(query).scalars())
    if held:
        _archive(conn, held, _latest(conn, held))


def _archive(conn: Connection, names: list[str], latest: dict[str, tuple[int, str]]) -> None:
    """Move the stored content of `names` into version_contents; their newest version takes the
    stored metadata (the latest seen with that content)."""
    contents: dict[str, str] = {}
    for part in in_batches(names):
        query = select(_D.name, _D.content, _D.content_sha256, _D.fetched_at, _D.upstream,
                       *(_D[c] for c in _META)).where(_D.name.in_(part))  # fmt: skip
        for row in conn.execute(query).mappings():
            sha, name = row["content_sha256"], row["name"]
            contents[sha] = row["content"]
            meta = {c: row[c] for c in _META}
            number, newest = latest.get(name, (0, None))
            if newest == sha:
                conn.execute(
                    update(document_versions)
                    .where(_V.name == name, _V.version == number)
                    .values(**meta)
                )
            else:
                # Written before history existed, or by a path that bypassed it: record it now.
                number += 1
                conn.execute(
                    document_versions.insert().values(
                        name=name, version=number, sha256=sha, fetched_at=row["fetched_at"],
                        upstream=row["upstream"], **meta,
                    )
                )  # fmt: skip
                latest[name] = (number, sha)
    if contents:
        # In sha256 order: two PostgreSQL writers archiving the same contents at once then wait
        # for each other's rows in one order, never in a cycle (a deadlock).
        conn.execute(
            insert_missing(conn.dialect.name, version_contents, ["sha256"]),
            [{"sha256": sha, "content": text} for sha, text in sorted(contents.items())],
        )


def prune(conn: Connection, keep: int, names: Sequence[str] | None = None) -> int:
    """Keep the newest `keep` versions of each of `names` (None: every name); returns how many
    versions were dropped. Content no remaining version uses goes too."""
    if keep < 1:
        raise ValueError(f"keep at least 1 version, not {keep}")
    newest = select(_V.name, func.max(_V.version).label("v")).group_by(_V.name)
    groups = [newest.where(_V.name.in_(part)) for part in in_batches(names)] if names else [newest]
    dropped = 0
    hashes: set[str] = set()
    for group in groups:
        over = [(n, v) for n, v in conn.execute(group) if v > keep]
        for name, top in over:
            doomed = and_(_V.name == name, _V.version <= top - keep)
            hashes.update(conn.execute(select(_V.sha256).where(doomed)).scalars())
            dropped += conn.execute(delete(document_versions).where(doomed)).rowcount or 0
    for part in in_batches(sorted(hashes)):
        used = select(_V.sha256).where(_V.sha256.in_(part))
        conn.execute(
            delete(version_contents).where(
                version_contents.c.sha256.in_(part), version_contents.c.sha256.not_in(used)
            )
        )
    return dropped


def versions(conn: Connection, name: str) -> list[Version]:
    """Every version of `name`, newest first; the current one marked."""
    current = conn.execute(select(_D.content_sha256).where(_D.name == name)).scalar()
    gone = conn.execute(
        select(gone_documents.c.gone_since).where(gone_documents.c.name == name)
    ).scalar()
    rows = conn.execute(
        select(_V.version, _V.sha256, _V.update_time, _V.fetched_at, _V.upstream)
        .where(_V.name == name)
        .order_by(_V.version.desc())
    ).all()
    out: list[Version] = []
    marked = False
    for number, sha, update_time, fetched_at, source in rows:
        is_current = not marked and sha == current
        marked = marked or is_current
        out.append(
            Version(name, number, sha, update_time, fetched_at, source, is_current,
                    gone if is_current else None)
        )  # fmt: skip
    return out


def version_document(conn: Connection, name: str, sha256: str) -> Document | None:
    """The document `name` as it was with content `sha256` (its newest such version), or None."""
    row = conn.execute(
        select(_V.uri, _V.title, _V.description, _V.data_source, _V.update_time,
               _V.content_length_bytes, _V.extra_json)
        .where(_V.name == name, _V.sha256 == sha256)
        .order_by(_V.version.desc())
        .limit(1)
    ).first()  # fmt: skip
    if row is None:
        return None
    content = conn.execute(
        select(version_contents.c.content).where(version_contents.c.sha256 == sha256)
    ).scalar()
    if content is None:  # the current version: its content is in `documents`
        content = conn.execute(
            select(_D.content).where(_D.name == name, _D.content_sha256 == sha256)
        ).scalar()
    if content is None:
        return None
    uri, title, description, data_source, update_time, length, extra_json = row
    return stored_document(
        name, uri, title, description, data_source, update_time, length, content, extra_json
    )


def stamps(conn: Connection, prefix: str | None, checked_before: float | None) -> list[Stamp]:
    """Documents with content, by name, whose last check is before `checked_before` (None:
    all), optionally only under `prefix`: what a refresh asks upstream about."""
    g = gone_documents.c
    checked = case((g.checked_at > _D.fetched_at, g.checked_at), else_=_D.fetched_at)
    query = (
        select(_D.name, _D.update_time, _D.content_length_bytes, checked)
        .outerjoin(gone_documents, g.name == _D.name)
        .where(_D.content.is_not(None))
        .order_by(_D.name)
    )
    if prefix:
        query = query.where(_D.name >= prefix, _D.name < prefix + "\U0010ffff")
    if checked_before is not None:
        query = query.where(checked < checked_before)
    return [Stamp(*row) for row in conn.execute(query)]


def mark_checked(conn: Connection, names: Sequence[str], at: float) -> None:
    """Upstream still has `names` unchanged: their copies count as fetched `at`."""
    for part in in_batches(names):
        conn.execute(
            update(documents).where(_D.name.in_(part)).values(fetched_at=at, seen_update_time=None)
        )
        conn.execute(delete(gone_documents).where(gone_documents.c.name.in_(part)))


def mark_gone(conn: Connection, names: Sequence[str], at: float) -> None:
    """Upstream no longer has `names`: flag them (keeping when they first went), keep the copy."""
    g = gone_documents.c
    for part in in_batches(names):
        known = set(conn.execute(select(g.name).where(g.name.in_(part))).scalars())
        if known:
            conn.execute(
                update(gone_documents).where(g.name.in_(sorted(known))).values(checked_at=at)
            )
        present = set(conn.execute(select(_D.name).where(_D.name.in_(part))).scalars())
        fresh = [{"name": n, "gone_since": at, "checked_at": at}
                 for n in part if n not in known and n in present]  # fmt: skip
        if fresh:
            conn.execute(gone_documents.insert(), fresh)


def clear_gone(conn: Connection, names: Sequence[str]) -> None:
    """Upstream has `names` again."""
    for part in in_batches(names):
        conn.execute(delete(gone_documents).where(gone_documents.c.name.in_(part)))
