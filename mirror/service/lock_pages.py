"""Which pinned pages the store now holds in another version than the lock (`lock --check
--format markdown`): changed (with what the diff shows), gone upstream, or new under a locked
prefix. Local only: a CI job syncs the lock, refreshes, then asks this.
"""

from __future__ import annotations

from ..changes.classify import classify
from ..errors import InvalidInput
from ..snapshots import lockfile
from ..snapshots.lock_report import PageChange, diff_summary
from .context import Context

# More locked names than this missing from the store are named in the error as a count.
_NAMED = 10


def page_changes(ctx: Context, lock: lockfile.Lock) -> list[PageChange]:
    """Every page whose store copy differs from `lock`, sorted by kind then name."""
    store = ctx.store
    wanted = {e.name: e for e in lock.entries}
    cached = store.get_many(list(wanted))
    missing = sorted(n for n in wanted if n not in cached)
    if missing:
        shown = ", ".join(missing[:_NAMED]) + (" ..." if len(missing) > _NAMED else "")
        raise InvalidInput(
            f"{len(missing)} locked document(s) are not in the store: {shown}",
            hint="the store has not been synced from this lock: run `dk-mirror sync --locked` "
            "(then `dk-mirror refresh` to see what changed upstream)",
        )
    pages: list[PageChange] = []
    for name, entry in wanted.items():
        copy = cached[name]
        gone = next((v.gone_since for v in store.versions(name) if v.current), None)
        if gone is not None:
            pages.append(PageChange(name, "removed", entry.update_time, copy.document.update_time,
                                    ("upstream no longer has this page",)))  # fmt: skip
            continue
        if f"sha256:{copy.sha256}" == entry.sha256:
            continue
        pages.append(_changed(ctx, entry, copy.document.content or "", copy.document.update_time))
    pages += _added(ctx, lock, set(wanted))
    order = {"changed": 0, "removed": 1, "added": 2}
    return sorted(pages, key=lambda p: (order[p.kind], p.name))


def _changed(
    ctx: Context, entry: lockfile.LockEntry, content: str, update: str | None
) -> PageChange:
    locked_hex = entry.sha256.removeprefix("sha256:")
    before = ctx.store.version_document(entry.name, locked_hex)
    if before is None or before.content is None:
        why = ("the locked version is no longer kept here, so no diff",)
        return PageChange(entry.name, "changed", entry.update_time, update, why)
    command = f"dk-mirror diff {entry.name} --from {locked_hex[:12]}"
    signals = classify(before.content, content).signals
    summary = diff_summary(before.content, content, signals)
    return PageChange(entry.name, "changed", entry.update_time, update, summary, command)


def _added(ctx: Context, lock: lockfile.Lock, locked: set[str]) -> list[PageChange]:
    """Pages the store holds under a prefix the lock was made from, not in the lock (a crawl
    or `dk-mirror lock` found them after the lock was written)."""
    if lock.made_from is None:
        return []
    out = []
    for prefix in sorted(lock.made_from.prefixes):
        for item in ctx.store.list_documents(prefix, None, content_only=True):
            if item.name.startswith(prefix) and item.name not in locked:
                locked.add(item.name)
                out.append(PageChange(item.name, "added", None, item.update_time,
                                      ("new page under a locked prefix",)))  # fmt: skip
    return out
