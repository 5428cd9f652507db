"""Deltas and diffs: apply a delta snapshot to its base; compare two snapshots or documents.

A delta holds only the documents added or changed since its base, and a tombstone for each base
document that is gone; its manifest pins the base (`base`) and the state after it (`root`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..models import Document
from .format import Entry, Manifest, RootHasher, Snapshot, SnapshotError, State, state_root

What = Literal["content", "metadata", "both"]
StateLike = Snapshot | Manifest | Mapping[str, tuple[str, str]]


def apply_delta(base_state: Mapping[str, tuple[str, str]], delta: Snapshot | Manifest) -> State:
    """The state after applying `delta` to `base_state`, refusing a delta made on another base."""
    manifest = delta.manifest if isinstance(delta, Snapshot) else delta
    if manifest.kind != "delta":
        raise SnapshotError("this is a full snapshot, not a delta", hint="import it directly")
    if not manifest.complete:
        raise SnapshotError(
            "this delta's manifest was streamed without its entries",
            hint="read the delta with snapshots.read.read(), or use delta_roots()",
        )
    check_base(manifest, state_root(base_state))
    state = dict(base_state)
    for e in manifest.entries:
        if e.content is None or e.metadata is None:
            state.pop(e.name, None)
        else:
            state[e.name] = (e.content, e.metadata)
    check_result(manifest, state_root(state))
    return state


def check_base(manifest: Manifest, have: str) -> None:
    """Refuse a delta made against another base than the state whose root is `have`."""
    if manifest.base != have:
        raise SnapshotError(
            f"this delta was made against snapshot {manifest.base}; the store/base is {have}",
            hint="apply the deltas in order, starting from the full snapshot they were made on",
        )


def check_result(manifest: Manifest, got: str) -> None:
    """Refuse a delta whose application gives another root (`got`) than it promises."""
    if got != manifest.root:
        raise SnapshotError(
            f"applying this delta gives {got}, but the delta promises {manifest.root}",
            hint="the delta is inconsistent with its own manifest: export it again",
        )


def delta_roots(base: Iterable[tuple[str, str, str]], delta: Iterable[Entry]) -> tuple[str, str]:
    """(root of `base`, root of `base` with `delta` applied), both streams sorted by name:
    apply_delta's check in bounded memory, for a store of any size."""
    before, after = RootHasher(), RootHasher()
    changes = iter(delta)
    change = next(changes, None)
    for name, content, metadata in base:
        before.add(name, content, metadata)
        while change is not None and change.name < name:
            if not change.removed:
                after.add(change.name, str(change.content), str(change.metadata))
            change = next(changes, None)
        if change is not None and change.name == name:
            if not change.removed:
                after.add(name, str(change.content), str(change.metadata))
            change = next(changes, None)
        else:
            after.add(name, content, metadata)
    while change is not None:
        if not change.removed:
            after.add(change.name, str(change.content), str(change.metadata))
        change = next(changes, None)
    return before.hexdigest(), after.hexdigest()


@dataclass(frozen=True, slots=True)
class Diff:
    """Names added, removed and changed from `a` to `b`, each list sorted by name."""

    added: list[str]
    removed: list[str]
    changed: list[tuple[str, What]]

    @property
    def empty(self) -> bool:
        """True when both sides hold the same documents, byte for byte."""
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, Any]:
        """A stable JSON form for `--json` output."""
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": [{"name": name, "what": what} for name, what in self.changed],
        }


def _state(side: StateLike) -> Mapping[str, tuple[str, str]]:
    if isinstance(side, Snapshot):
        return side.state()
    if isinstance(side, Manifest):
        return side.state()
    return side


def diff(a: StateLike, b: StateLike) -> Diff:
    """Compare two full snapshots (or manifests, or name -> hashes states)."""
    left, right = _state(a), _state(b)
    changed: list[tuple[str, What]] = []
    for name in sorted(left.keys() & right.keys()):
        (ca, ma), (cb, mb) = left[name], right[name]
        if ca != cb and ma != mb:
            changed.append((name, "both"))
        elif ca != cb:
            changed.append((name, "content"))
        elif ma != mb:
            changed.append((name, "metadata"))
    return Diff(sorted(right.keys() - left.keys()), sorted(left.keys() - right.keys()), changed)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def unified_content_diff(doc_a: Document | None, doc_b: Document | None) -> str:
    """A unified diff of the Markdown (`a/<name>`, `b/<name>`; None side is /dev/null)."""
    if doc_a is None and doc_b is None:
        return ""
    from_file = f"a/{doc_a.name}" if doc_a else "/dev/null"
    to_file = f"b/{doc_b.name}" if doc_b else "/dev/null"
    old = _lines(doc_a.content or "") if doc_a else []
    new = _lines(doc_b.content or "") if doc_b else []
    out: list[str] = []
    for line in difflib.unified_diff(old, new, from_file, to_file):
        if line.endswith("\n"):
            out.append(line)
        else:
            # As git does, so the output stays one diff line per text line and applies cleanly.
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
