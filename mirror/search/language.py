"""The language a search query is written in, and the language of a page: pure, no I/O.

Why: the packaged embedding model is English-only. For a question in another language its
nearest pages by meaning are close to noise (unrelated pages in the same script, English
pages sharing a product name), and fused with the lexical ranking they crowd the answer out
of the first places (on bench/data/questions.json's dev half, other-language questions went
from 0.93 hit@5 lexically to 0.73 fused). The store knows a page's language by the locale
segment of its name (mirror.search.translations); the query's is guessed here, from its
script (kana, Hangul, CJK ideographs, Cyrillic) or, in Latin script, from the small words
every sentence of a language holds (articles, prepositions) that English never uses.
A query is None ("not known to be another language", treated as English) unless a sign says
otherwise: a wrong guess of English costs nothing that the lexical tier did not do before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from .lexical import STOPWORDS, stem_key
from .stopwords import OTHER
from .translations import locale_of

Hit = TypeVar("Hit")

ENGLISH = "en"

_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_WORD = re.compile(r"[^\W\d_]+")
_WORD_ONLY = re.compile(r"[\W\d_]+")  # what is not a letter (punctuation around a word)

# Function words of the Latin-script languages the corpus holds, left out when English text
# has the same spelling ("a", "in", "on", "do", "as", "die"; "em" and "com" from CSS and
# URLs, "e" from "e.g.") or when two of these languages share it ("para", "de", "como",
# "está", "que", "se", "das", "des", "un", "ou", "navegador"): each word here names one
# language.
# fmt: off
_FUNCTION_WORDS = {
    "es": frozenset((
        "el", "la", "los", "las", "del", "al", "una", "unos", "unas", "y", "en", "con",
        "qué", "cómo", "cuándo", "dónde", "es", "están", "su", "sus", "mi",
        "lo", "pero", "sin", "hasta", "muy",
        "mis", "tus", "hay", "puedo", "usuario", "cuando", "donde",
        "también", "entonces", "hacer", "archivo", "archivos", "pantalla", "datos",
    )),
    "pt": frozenset((
        "um", "uma", "uns", "umas", "os", "na", "nas", "ao", "aos",
        "pelo", "pela", "pelos", "pelas", "é", "não", "seu", "sua", "seus", "suas", "meu",
        "minha", "sem", "muito", "são",
        "posso", "usuário", "página", "celular", "você", "vez", "isso", "também",
        "então", "onde", "fazer", "ainda", "depois", "aplicativo", "arquivo", "arquivos",
        "tela", "dados",
    )),
    "de": frozenset((
        "der", "dem", "den", "ein", "eine", "einen", "einem", "einer", "und",
        "mit", "von", "zu", "zum", "zur", "auf", "für", "ist", "sind", "nicht", "wie", "ich",
        "kann", "wird", "werden", "oder", "aber", "ohne", "beim", "im", "sich", "auch",
        "warum", "wir", "vom",
    )),
    "fr": frozenset((
        "les", "une", "des", "du", "au", "aux", "et", "avec", "pour", "dans",
        "sur", "est", "sont", "ne", "pas", "comment", "je", "mon", "ma", "mes",
        "sans", "très", "cette", "ce", "ces", "qui", "quand", "peut", "utiliser",
    )),
}
# fmt: on
# Letters only one of these languages writes, and word endings only one of them spells so.
_LETTERS = {"es": "ñ¿¡", "pt": "ãõç", "de": "ßäöü", "fr": "èêëàâîïôûùœ"}
# Also as typed without accents ("configuracion", "notificacoes"): English spells none so.
_ENDINGS = {
    "es": ("ción", "ciones", "cion"),
    "pt": ("ção", "ções", "cao", "coes", "sao", "soes"),
    "de": (),
    "fr": (),
}


def query_language(query: str) -> str | None:
    """The language `query` is written in ("ja", "ko", "zh", "ru", "es", "pt", "de", "fr"),
    or None when nothing says it is not English. Kana makes Japanese even beside ideographs
    (Japanese writes both); ideographs alone are Chinese. In Latin script: two signs of one
    language (a function word, a letter, a word ending), or one beside no English function
    word ("cómo detectar usuarios inactivos"); a lone one-letter word ("y") is no sign alone."""
    if _HANGUL.search(query):
        return "ko"
    if _KANA.search(query):
        return "ja"
    if _HAN.search(query):
        return "zh"
    if _CYRILLIC.search(query):
        return "ru"
    words = _WORD.findall(query.casefold())
    votes = {lang: _signs(words, lang) for lang in _FUNCTION_WORDS}
    best = max(votes, key=lambda lang: votes[lang])
    if votes[best] >= 2:
        return best
    # An English stopword that is a function word of that language too ("do" and "no" in
    # Portuguese, "a" in Spanish) says nothing about which it is.
    english = any(w in STOPWORDS and w not in OTHER[best] for w in words)
    strong = votes[best] - sum(len(w) == 1 and w in _FUNCTION_WORDS[best] for w in words)
    return best if strong >= 1 and not english else None


def without_function_words(query: str, language: str) -> str:
    """`query` without its words that are function words of `language` (mirror.search.stopwords
    lists them for Spanish, Portuguese, German, French and Russian), or `query` itself when
    no other word would remain. For the ranking that puts the pages of the query's language first
    (`in_language_first`): there they are noise. Without that rule they are kept, since they
    are what tells a translation from the English page ("Migration vom Conversion
    Measurement API" finds the German page by "vom")."""
    drop = OTHER.get(language)
    if not drop:
        return query
    kept = [t for t in query.split() if _WORD_ONLY.sub("", t.casefold()) not in drop]
    return " ".join(kept) if kept else query


def content_words(query: str) -> str:
    """`query` without the function words of the language it is written in, when that is
    one of the other languages (`without_function_words`): the words its snippets mark and its
    extractive answer looks for, as its ranking uses them. English stopwords are left to the
    callers (mirror.search.lexical.STOPWORDS)."""
    language = query_language(query)
    return query if language is None else without_function_words(query, language)


def _signs(words: Sequence[str], language: str) -> int:
    """How many signs of `language` the (case-folded) words hold."""
    marks, letters, endings = _FUNCTION_WORDS[language], _LETTERS[language], _ENDINGS[language]
    return sum(
        (w in marks) + any(c in letters for c in w) + (bool(endings) and w.endswith(endings))
        for w in words
    )


def page_language(name: str) -> str:
    """The language of the page `name`: its locale segment's, else English (the sites'
    untranslated pages are English)."""
    return locale_of(name) or ENGLISH


def in_language_first(
    hits: Sequence[Hit],
    name: Callable[[Hit], str],
    language: str,
    *,
    words: Sequence[str] = (),
    text: Callable[[str], str] | None = None,
    limit: int | None = None,
) -> list[Hit]:
    """`hits` with the pages in `language` that are about the question ahead of the others,
    each part in its order (exact in its first `limit`, when given: later pages in `language`
    are not read once `limit` went first). For a query in another language the lexical tier
    still ranks English pages that share its product names and code (PWA, JavaScript) above
    the translation that answers it in words the English page lacks (on the dev half: a
    Chinese question's page at 44, behind English release notes); the reader asked in their
    language, and a translation of the right page is the answer they can read.

    But a page in the reader's language is no answer when the question is about something
    only documented in English: "cómo entrenar un modelo con tensorflow" matched Spanish
    Chrome pages on "modelo" and "entrenar" (the Privacy Sandbox Topics page holds both), and
    putting all of them first buried the TensorFlow pages. The query's `words` that the best
    English page holds (`subject_words`: "tensorflow", "PWA", "Lighthouse") are what it is
    about, written as every language writes them; a page in `language` goes first only when
    it holds two thirds of them (`text`: a page's case-folded title and content, by name).
    Two thirds, not every one: a translation writes some in its own words ("server side
    rendering" is "renderizado del lado del servidor" on the Spanish Declarative Shadow DOM
    page, which holds 4 of its 6). Scores cannot tell these cases apart: the Spanish Chrome
    pages scored 0.69 of the best TensorFlow page (raw BM25 6.1 / 9.0), while the Chinese
    page that answers its question scored 0.22 of the release notes above it (5.5 / 24.8).
    On bench/data/questions.json's dev half (24 other-language questions ranked this way)
    hit@1 / hit@5 / MRR@10 went from 0.79 / 1.00 / 0.88 to 0.83 / 1.00 / 0.91: one Korean
    question's page moved from 3rd to 1st, no other moved (every one of them: 0.88 / 1.00 /
    0.93, but the Spanish Declarative Shadow DOM page fell below the English one). Without
    `words` or `text` every page in `language` goes first."""
    read = text or (lambda _page: "")
    names = subject_words(hits, name, words, read) if text is not None else []
    ahead: list[Hit] = []
    for hit in hits:
        if limit is not None and len(ahead) >= limit:
            break
        page = name(hit)
        if page_language(page) != language:
            continue
        if 3 * sum(holds(read(page), w) for w in names) < 2 * len(names):
            continue
        ahead.append(hit)
    chosen = {id(h) for h in ahead}
    return ahead + [h for h in hits if id(h) not in chosen]


def subject_words(
    hits: Sequence[Hit],
    name: Callable[[Hit], str],
    words: Sequence[str],
    text: Callable[[str], str],
) -> list[str]:
    """The `words` of a query in another language that the best English page of `hits`
    holds: product and API names, which translations keep as they are. The best page only:
    it is the answer the question gets when no page in its language is about it, and one
    page is read, not a hundred (on the dev half, the words any of the first 3 or 100 English
    pages hold ranked the same). Words with a digit ("3G", "192px", "800") are a detail of
    the question, not what it is about: the Portuguese page on slow loads over 3G, which
    writes it otherwise, fell from 1st to 5th when it was required."""
    best = next((name(h) for h in hits if page_language(name(h)) == ENGLISH), None)
    if best is None:
        return []
    held = text(best)
    return [w for w in words if not any(c.isdigit() for c in w) and holds(held, w)]


def holds(text: str, word: str) -> bool:
    """Whether the case-folded `text` holds a word starting as `word` does without its
    English ending (mirror.search.lexical.stem_key: "cookies" counts "cookie")."""
    key = stem_key(word)
    return bool(key) and re.search(r"(?<!\w)" + re.escape(key), text) is not None
