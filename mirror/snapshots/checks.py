"""Checks of a snapshot's manifest and entries (format v1 and v2), shared by the reader."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidName
from ..names import normalize
from .format import FORMAT, HASH, VERSION, VERSIONS, Entry, Manifest


class Bad(Exception):
    """One structural problem, raised inside the scanner and recorded there."""


def manifest_from_json(obj: object) -> Manifest:
    """The manifest a snapshot's last line holds, checked (raises Bad, saying what is off)."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise Bad("not a dk-mirror snapshot manifest")
    version = obj.get("version")
    if version not in VERSIONS:
        raise Bad(f"format version {version!r} is not {VERSION} (a newer dk-mirror?)")
    try:
        if version == 1:
            entries = tuple(entry_from_json(e) for e in obj["entries"])
            size = None
        else:
            entries, size = (), obj["count"]
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise Bad(f"count {size!r} is not a number of entries")
        manifest = Manifest(
            obj["kind"], entries, obj["root"], obj["base"], obj["selection"], version, size
        )
        rebuilt = manifest.to_json()
    except (KeyError, TypeError, AttributeError) as exc:
        raise Bad(f"malformed manifest ({exc!r})") from None
    if version == 1 and obj.get("count") != len(entries):
        raise Bad(f"count is {obj.get('count')!r} but there are {len(entries)} entries")
    # Rebuilding and comparing catches stray keys and wrong types without a check for each.
    if rebuilt != obj or manifest.kind not in ("full", "delta"):
        raise Bad("malformed manifest: its keys or entries are not the ones dk-mirror writes")
    check_entries(entries)
    full = manifest.kind == "full"
    if full and (manifest.base is not None or any(e.removed for e in entries)):
        raise Bad("a full snapshot has neither a base nor tombstones")
    check_digests([manifest.root, *([] if full else [manifest.base])])
    return manifest


def entry_from_json(e: Any) -> Entry:
    """One manifest entry as written (raises Bad for other keys)."""
    entry = Entry(e["name"], e.get("content"), e.get("metadata"))
    if entry.to_json() != e:
        raise Bad("malformed entry: its keys are not the ones dk-mirror writes")
    return entry


def check_entries(entries: tuple[Entry, ...], after: str | None = None) -> None:
    """Names sorted and unique (after `after`), digests well formed."""
    names = [e.name for e in entries]
    if any(not isinstance(n, str) for n in names) or names != sorted(set(names)):
        raise Bad("manifest entries are not sorted by name and unique")
    if after is not None and names and names[0] <= after:
        raise Bad("manifest entries are not sorted by name and unique")
    check_digests([h for e in entries if not e.removed for h in (e.content, e.metadata)])


def check_digests(digests: list[Any]) -> None:
    """Every digest a tagged sha256 (raises Bad naming the first that is not)."""
    for digest in digests:
        if not isinstance(digest, str) or not HASH.match(digest):
            raise Bad(f"{str(digest)[:80]!r} is not a sha256:<64 lower-case hex> digest")


def check_name(name: str) -> None:
    """Refuse a name that `get` and `import` would refuse, or that is not already canonical."""
    try:
        canonical = normalize(name)
    except InvalidName as exc:
        raise Bad(f"bad document name {name[:200]!r}: {exc.message}") from None
    if canonical != name:
        raise Bad(f"document name {name[:200]!r} is not canonical (would be {canonical!r})")
