"""Replaying a store's change log: the check that it holds exactly one event per change."""

from __future__ import annotations

from collections import Counter

from tests.conftest import query_store


def replay_change_log(db_url: str) -> Counter[str]:
    """Replay the log from an empty store and compare with what the store holds; returns the
    events per kind. Each event must start where the name's previous one ended, so an event
    repeated, lost, out of order or written without its change breaks the chain."""
    events = query_store(
        db_url, "SELECT name, kind, old_sha256, new_sha256 FROM change_events ORDER BY id"
    )
    held = dict(
        query_store(
            db_url, "SELECT name, content_sha256 FROM documents WHERE content_sha256 IS NOT NULL"
        )
    )
    state: dict[str, str | None] = {}
    kinds: Counter[str] = Counter()
    for name, kind, old, new in events:
        assert old == state.get(name), f"{name}: {kind} from {old}, stored was {state.get(name)}"
        assert kind == ("added" if old is None else "removed" if new is None else "changed")
        assert old != new
        state[name] = new
        kinds[kind] += 1
    assert {n: s for n, s in state.items() if s is not None} == held
    return kinds
