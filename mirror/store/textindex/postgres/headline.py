"""Snippets on PostgreSQL: ts_headline picks and marks the part of each shown chunk that best
shows why it matched, for the page of results a shell displays (never for every match:
ts_headline parses the whole text it is given), in one statement per page.

The index holds text cut by mirror.search.tsquery (`chrome.runtime.onMessage` is three words
there, `缓存` two), which PostgreSQL's own parser would not cut the same way, so ts_headline
reads the cut form of the shown text (tsquery.headline_text) and its query marks the cut
words; the fragment it chose and the words it marked are then mapped back, character by
character, to the text the user reads: `onMessage`, not `onmessage`. The markers and the
fragment delimiter are punctuation, which the cut text never holds, so they are unambiguous.

The result is what SQLite's snippets are (mirror.search.snippets.best_window): (segment,
marked) pairs over about the same length of text, `…` where the text goes on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import Connection, text

from ....search.tsquery import headline_query, headline_text
from .index import CONFIG

Snippet = list[tuple[str, bool]]

START, STOP = "<b>", "</b>"
DELIMITER = " ... "
# One fragment of 30 to 35 words (about the 240 characters of SQLite's window on prose; as
# long when no word matched, the match being in the title), with context on both sides of the words it marks (MaxFragments 1: the default mode starts
# at the first match, with nothing before it). ShortWord 0: ts_headline would otherwise drop
# words of 3 letters or less at the fragment's ends, every CJK character among them.
OPTIONS = (
    f"MaxFragments=1, MaxWords=35, MinWords=30, ShortWord=0, StartSel={START}, "
    f'StopSel={STOP}, FragmentDelimiter="{DELIMITER}"'
)
_HEADLINES = text(
    f"SELECT ts_headline('{CONFIG}', x.t, to_tsquery('{CONFIG}', :q), :options) "
    "FROM unnest(CAST(:texts AS text[])) WITH ORDINALITY AS x(t, n) ORDER BY x.n"
)
_MARKED = re.compile(f"{re.escape(START)}(.*?){re.escape(STOP)}", re.DOTALL)
ELLIPSIS = "…"
WIDEN = 20


def headlines(conn: Connection, query: str, shown: Sequence[str]) -> list[Snippet] | None:
    """The snippet of each of the texts `shown` (already reduced to one line of prose) for
    `query`, in order; None when the query has no word to mark (the caller's plain window
    serves then: a headline of nothing is only the text's start)."""
    tsquery = headline_query(query)
    if not tsquery or not shown:
        return None
    cuts = [headline_text(s) for s in shown]
    rows = conn.execute(
        _HEADLINES, {"q": tsquery, "options": OPTIONS, "texts": [cut for cut, _ in cuts]}
    ).all()
    return [
        snippet(s, cut, origins, str(row[0]))
        for s, (cut, origins), row in zip(shown, cuts, rows, strict=True)
    ]


def snippet(shown: str, cut: str, origins: Sequence[int], headline: str) -> Snippet:
    """ts_headline's `headline` of `cut` as segments of `shown`, the text `cut` was cut from
    (`origins`: the index in `shown` of each character of `cut`)."""
    segments: Snippet = []
    end = 0  # where the last fragment ended, in `cut`
    right = 0  # and in `shown`
    for fragment in (f.strip() for f in headline.split(DELIMITER)):
        plain = _MARKED.sub(r"\1", fragment)
        start = cut.find(plain, end) if plain else -1
        if start < 0:
            continue
        end = start + len(plain)
        left, right = _widened(shown, origins[start], origins[end - 1] + 1)
        if segments or left > 0:
            segments.append((f" {ELLIPSIS} " if segments else ELLIPSIS, False))
        done = left
        for number, found in enumerate(_MARKED.finditer(fragment)):
            # The mark's place in `plain`: its place in the fragment less the markers before.
            first = start + found.start() - number * (len(START) + len(STOP))
            word_start, word_end = origins[first], origins[first + len(found[1]) - 1] + 1
            if word_start > done:
                segments.append((shown[done:word_start], False))
            segments.append((shown[word_start:word_end], True))
            done = word_end
        if right > done:
            segments.append((shown[done:right], False))
    if segments and right < len(shown):
        segments.append((ELLIPSIS, False))
    return segments


def _widened(shown: str, left: int, right: int) -> tuple[int, int]:
    """The span `left`..`right` of `shown` widened to whole whitespace-separated tokens (the
    cut text ends a fragment at a word: `eats` of `eats.`, `addListener` of `addListener()`),
    by WIDEN characters at most on each side (a CJK sentence has no spaces)."""
    stop = max(left - WIDEN, 0)
    while left > stop and not shown[left - 1].isspace():
        left -= 1
    stop = min(right + WIDEN, len(shown))
    while right < stop and not shown[right].isspace():
        right += 1
    # Nothing but punctuation before or after (a list's `-`, a closing `)`): show it too.
    if not any(c.isalnum() for c in shown[:left]):
        left = 0
    if not any(c.isalnum() for c in shown[right:]):
        right = len(shown)
    return left, right
