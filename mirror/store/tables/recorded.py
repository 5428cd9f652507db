"""Recorded upstream pages and answers as read back from the store (shared by Store and Reader)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...models import Answer, SearchPage


@dataclass(frozen=True, slots=True)
class RecordedPage:
    """A search page as upstream answered it, and when."""

    page: SearchPage
    recorded_at: float
    upstream: str


@dataclass(frozen=True, slots=True)
class RecordedAnswer:
    """An answer as upstream gave it, with the hashes of the documents it cited then."""

    answer: Answer
    cited: dict[str, str | None]
    recorded_at: float
    upstream: str


def recorded_page(row: Sequence[Any] | None) -> RecordedPage | None:
    """A RecordedPage from a row of sql.RECORDED_PAGE (None for no row)."""
    if row is None:
        return None
    return RecordedPage(SearchPage.from_api(json.loads(row[0])), row[1], row[2])


def recorded_answer(row: Sequence[Any] | None) -> RecordedAnswer | None:
    """A RecordedAnswer from a row of sql.RECORDED_ANSWER (None for no row)."""
    if row is None:
        return None
    cited = {r["name"]: r["sha256"] for r in json.loads(row[1])}
    return RecordedAnswer(Answer.from_api(json.loads(row[0])), cited, row[2], row[3])
