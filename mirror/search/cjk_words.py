"""The words of a Korean or Japanese query, without a dictionary: pure, no I/O.

The index holds CJK text as overlapping bigrams of each run (mirror.search.lexical), and a
query word becomes a phrase of its bigrams: a page matches it when the word appears inside
one of its runs. What a query word drags along then decides whether that phrase matches:

- Korean writes spaces between words, but each word carries its particles and endings
  ("광고를" = "광고" + object particle, "앱에서" = "앱" + "in"): the phrase "광고 고를" matches
  only pages that write that very form. The stem alone ("광고") matches every form of it,
  since the page's bigrams hold the stem's.
- Japanese writes no spaces: a whole question is one run, its phrase matches no page, and
  its bigrams across particles ("トの", "が使") match unrelated pages. Cut at its hiragana
  (particles, okurigana, auxiliaries) and at changes between katakana and kanji, the pieces
  are its words ("クロスサイト", "クッキー", "準備").
Chinese is left to its bigrams: a cut needs a dictionary ("功能" holds "能", a function word).
"""

from __future__ import annotations

import re

_HANGUL_WORD = re.compile(r"[\uac00-\ud7af]+")
_HIRAGANA = "\u3040-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_KANA = re.compile(f"[{_HIRAGANA}{_KATAKANA}]")
# A Japanese token's pieces: runs of katakana (with the long-vowel mark, which is katakana
# here), runs of anything else that is neither kana nor space (kanji, Latin, digits); the
# hiragana runs between them are dropped.
_JAPANESE_PIECE = re.compile(f"[{_KATAKANA}]+|[^{_HIRAGANA}{_KATAKANA}\\s]+")

# Korean particles (josa) and the commonest verb endings, longest first within each group.
# fmt: off
_KOREAN_ENDINGS = (
    # Endings of several syllables: stripped whenever a syllable stays ("앱에서" -> "앱").
    "에서는", "에서도", "에게서", "으로는", "이라는", "하려면", "합니다", "됩니다", "입니다",
    "습니다", "에서", "에게", "한테", "으로", "로는", "부터", "까지", "보다", "처럼", "라는",
    "이나", "에는", "에도", "와의", "과의", "하는", "하면", "하고", "하여", "해서", "되는",
    "니다",
)
# One-syllable particles: stripped only from a word of three syllables or more, since many
# two-syllable nouns end in one ("추가" add, "서로" each other, "정의" definition).
_KOREAN_PARTICLES = (
    "은", "는", "이", "가", "을", "를", "의", "에", "도", "로", "와", "과", "만", "할", "된",
)
# fmt: on


def korean_stem(word: str) -> str:
    """`word` (one Korean word as typed, all Hangul) without its particle or ending."""
    for ending in _KOREAN_ENDINGS:
        if word.endswith(ending) and len(word) > len(ending):
            return word[: -len(ending)]
    if len(word) >= 3 and word.endswith(_KOREAN_PARTICLES):
        return word[:-1]
    return word


def japanese_pieces(token: str) -> list[str]:
    """The pieces of a Japanese `token`: its katakana words and its runs of kanji (and any
    Latin or digits), without the hiragana between them; the token itself when it is all
    hiragana (nothing else says what it asks)."""
    pieces = _JAPANESE_PIECE.findall(token)
    longer = [p for p in pieces if len(p) > 1]
    return longer or pieces or [token]


def query_words(token: str) -> list[str]:
    """The words of one whitespace-separated query `token`: a Japanese one (any kana) cut
    into its pieces, each Korean word in it stripped of its particle, any other as it is."""
    if token.isascii():
        return [token]
    if _KANA.search(token):
        return japanese_pieces(token)
    return [_HANGUL_WORD.sub(lambda word: _korean_part(token, word), token)]


def _korean_part(token: str, run: re.Match[str]) -> str:
    """The Hangul `run` of `token` as a query keeps it: a particle or ending written straight
    after a Latin word or a number ("Lighthouse에서", "API를", "Chrome의") is dropped whole,
    since the page writes the name without it; any other run loses its particle."""
    word = run.group()
    after_latin = run.start() > 0 and token[run.start() - 1].isalnum()
    if after_latin and (word in _KOREAN_ENDINGS or word in _KOREAN_PARTICLES):
        return ""
    return korean_stem(word)
