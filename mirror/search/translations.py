"""Translated pages in a ranking: untranslated pages first, unless the query is in the
translation's language. Pure: the caller says how many query terms each page holds.

Sites keep a page's translations under a locale segment after the host
(`developer.chrome.com/es/articles/hid` translates `developer.chrome.com/articles/hid`), and a
translation keeps the original's code, identifiers and many product words. So a query of
identifiers or English keywords matches both, and BM25 then prefers whichever is shorter or
repeats the code more: often the translation. The reader wants the page in the language they
asked in; the words they typed tell it: a translation stays ahead of an untranslated page
only when it holds more of the query's terms (a Spanish question's words are not on the
English page; the English page, not its translation, is the one about `sendFeatureReport`).
Terms are counted after stemming, so a Spanish "múltiples" counts for "multiple": the rule
needs no language detection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

# The languages Google's documentation sites translate into (ISO 639-1). A list, not any two
# letters: `tensorflow.org/js/guide` is a page of its own, not a translation of `/guide`.
# fmt: off
LANGUAGES = frozenset((
    "ar", "bn", "cs", "de", "el", "en", "es", "fa", "fr", "he", "hi", "hu", "id", "it", "ja",
    "ko", "ms", "nl", "pl", "pt", "ro", "ru", "sv", "th", "tr", "uk", "vi", "zh",
))
# fmt: on
# documents/{host}/{locale}/{path}: a language, optionally with a region or script (es, de,
# pt-br, zh-cn, zh_TW).
_LOCALE = re.compile(r"^(documents/[^/]+/)([a-z]{2})(?:[-_][A-Za-z]{2,4})?/(.+)$")

Hit = TypeVar("Hit")


def original_of(name: str) -> str | None:
    """The name the page `name` would translate (its locale segment dropped), or None."""
    match = _LOCALE.match(name)
    if match is None or match.group(2) not in LANGUAGES:
        return None
    return match.group(1) + match.group(3)


def locale_of(name: str) -> str | None:
    """The language (ISO 639-1) of the locale segment of `name`, or None for an
    untranslated page (`documents/developer.chrome.com/pt-br/...` -> "pt")."""
    match = _LOCALE.match(name)
    if match is None or match.group(2) not in LANGUAGES:
        return None
    return match.group(2)


def is_translation(name: str) -> bool:
    """Whether `name` is a page under a language segment (a translation)."""
    return original_of(name) is not None


def untranslated_first(
    hits: Sequence[Hit], name: Callable[[Hit], str], held: Mapping[str, int]
) -> list[Hit]:
    """`hits` with every translation moved below the untranslated pages ranked after it that
    hold at least as many of the query's terms (`held`, by name); otherwise in order."""
    out: list[Hit] = []
    waiting: list[Hit] = []  # translations not yet placed
    for hit in hits:
        if is_translation(name(hit)):
            waiting.append(hit)
            continue
        count = held.get(name(hit), 0)
        ahead = [t for t in waiting if held.get(name(t), 0) > count]
        out.extend(ahead)
        waiting = [t for t in waiting if held.get(name(t), 0) <= count]
        out.append(hit)
    return out + waiting
