"""History use cases: list a document's versions, diff two of them, prune old ones.

Versions are recorded by the store on every write (store/tables/versions.py); this module reads them.
Everything here is local: no network, ever.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from .. import names as naming
from ..errors import InvalidInput
from ..models import Document, Version
from .context import Context

# A hash prefix shorter than this is too easy to mistype into another version.
MIN_HASH_PREFIX = 4


def history(ctx: Context, name: str) -> list[Version]:
    """Every kept version of `name`, newest first (the current one marked)."""
    canonical = naming.normalize(name)
    found = ctx.store.versions(canonical)
    if not found:
        raise InvalidInput(
            f"{canonical} has no history: it is not in the store",
            hint=f"fetch it first (dk-mirror fetch {canonical}); its history starts then",
        )
    return found


def resolve(versions: list[Version], spec: str) -> Version:
    """The version `spec` names: a version number (`3`), or a hash prefix (`sha256:ab12`,
    `ab12`) matching exactly one version. Pure: `versions` is what `history` returned."""
    text = spec.strip()
    if text.isdigit():
        for version in versions:
            if version.number == int(text):
                return version
    prefix = text.lower().removeprefix("sha256:")
    if len(prefix) >= MIN_HASH_PREFIX and all(c in "0123456789abcdef" for c in prefix):
        matches = {v.sha256: v for v in versions if v.sha256.startswith(prefix)}
        if len(matches) == 1:
            return next(iter(matches.values()))
        if len(matches) > 1:
            raise InvalidInput(
                f"{spec!r} matches {len(matches)} versions",
                hint="give more of the hash, or the version number",
            )
    numbers = ", ".join(str(v.number) for v in versions)
    raise InvalidInput(
        f"no version {spec!r} of {versions[0].name}" if versions else f"no version {spec!r}",
        hint=f"kept versions: {numbers}; give a number, or at least "
        f"{MIN_HASH_PREFIX} hex digits of a hash (dk-mirror history NAME lists them)",
    )


@dataclass(frozen=True, slots=True)
class VersionDiff:
    """A unified diff of a document's Markdown from one version to another."""

    name: str
    old: Version
    new: Version
    text: str  # empty when the two versions have the same content

    def to_json(self) -> dict[str, Any]:
        """As `diff --json` prints it."""
        return {
            "name": self.name,
            "from": self.old.to_json(),
            "to": self.new.to_json(),
            "diff": self.text,
        }


def unified(name: str, old: Version, old_text: str, new: Version, new_text: str) -> str:
    """The unified diff (difflib) of two versions' Markdown, labelled by number and hash."""
    lines = difflib.unified_diff(
        old_text.splitlines(),
        new_text.splitlines(),
        fromfile=f"{name} v{old.number} sha256:{old.sha256[:12]}",
        tofile=f"{name} v{new.number} sha256:{new.sha256[:12]}",
        lineterm="",
    )
    text = "\n".join(lines)
    return text + "\n" if text else ""


def diff(ctx: Context, name: str, old: str | None = None, new: str | None = None) -> VersionDiff:
    """Diff version `old` to version `new` of `name` (default: the one before `new`, and the
    current version or else the newest)."""
    versions = history(ctx, name)
    canonical = versions[0].name
    if new is not None:
        to = resolve(versions, new)
    else:
        to = next((v for v in versions if v.current), versions[0])
    if old is not None:
        since = resolve(versions, old)
    else:
        older = [v for v in versions if v.number < to.number]
        if not older:
            raise InvalidInput(
                f"{canonical} has no version before version {to.number}",
                hint="dk-mirror history NAME lists its versions; give --from and --to",
            )
        since = older[0]
    old_text = _content(ctx, canonical, since)
    new_text = _content(ctx, canonical, to)
    return VersionDiff(canonical, since, to, unified(canonical, since, old_text, to, new_text))


def _content(ctx: Context, name: str, version: Version) -> str:
    doc = version_document(ctx, name, version.sha256)
    return doc.content or ""


def version_document(ctx: Context, name: str, sha256: str) -> Document:
    """`name` as it was with content `sha256` (hex), from the store's history."""
    doc = ctx.store.version_document(name, sha256)
    if doc is None or doc.content is None:
        raise InvalidInput(
            f"version sha256:{sha256[:12]} of {name} is no longer kept",
            hint="dk-mirror history NAME lists the versions kept",
        )
    return doc


def prune(ctx: Context, keep: int, name: str | None = None) -> int:
    """Keep the newest `keep` versions of `name` (None: of every document); returns how many
    versions were dropped."""
    if keep < 1:
        raise InvalidInput(f"keep at least 1 version, not {keep}")
    names = [naming.normalize(name)] if name else None
    return ctx.store.prune_versions(keep, names)
