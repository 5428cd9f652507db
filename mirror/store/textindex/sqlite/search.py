"""Local search on SQLite: documents ranked by BM25 in the store's tantivy index (text_index.py),
then each shown with its best chunks.

The one implementation for SQLite: the full Store runs it on the DBAPI connection under its
SQLAlchemy connection (index.search), the cold-start Reader on its own sqlite3 connection;
both hold one read transaction around it, and the index is synced inside it first. Queries are
built as tantivy query objects from mirror.search.lexical's terms, never parsed from user text.

The plan (the same as PostgreSQL's, pg_search.py): pages with every term first, topped up with
pages with any term or part of one (never above a page that had every term); a long question
ranks pages with any term from the start, and a long English one re-ranks its first pages by
their best passage too (mirror.search.passages; not on PostgreSQL yet). Tantivy scores every page that matches (see
text_index.py on why its block skipping is not used), in compiled code rather than a BM25
call per page as FTS5 did. A word that matches nothing is corrected from the
index's vocabulary. Every page found is checked against the store (and a `where` filter, as
SQL) before it is returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import tantivy

from ....errors import StoreError
from ....search import lexical, passages, translations
from ...db.compression import inflate
from ..ranking import LONG_QUERY, MIN_SCORE, DocumentHit, LocalHit, grouped
from .entries import FIELDS
from .index import TextIndex
from .shards import Damaged, ShardSearcher

# Score weight per field (title, description, heading lines, body, side column). A word
# scores its best field only (a disjunction max, see _Builder.anywhere), and tantivy scores
# each field's BM25 with its own length norm, so a title match already weighs more than one in
# a long body without a boost. Summed and boosted (2, 1.5, 1.5, 1, 1), one or two of a
# question's words in the title, description and headings outranked the page holding most of
# them in its body: on bench/data/questions.json's dev half, questions hit@1 / hit@5 went
# 0.15 / 0.63 -> 0.48 / 0.81 with this; keywords, identifiers, typos and other languages kept
# 1.00 hit@5.
WEIGHTS = dict(zip(FIELDS, (1.0, 1.0, 1.0, 1.0, 1.0), strict=True))
# The fields an identifier's parts rank in (in the body they favour any long page about them).
PART_FIELDS = ("title", "headings", "side")
# ... with their scores scaled by this (a larger share ranked pages about one part first).
PART_BOOST = 0.5
# A query of several terms also scores, scaled by this, on the title when the title holds
# every one of them: each word otherwise scores its best field alone, so a page with a short
# title holding two of three keywords (and the third in its description) outranked the page
# whose longer title names all three ("memory inspector wasm": "Introducing the Memory
# Inspector" above "Memory Inspector: Inspect ArrayBuffer, ... and Wasm Memory."). On
# bench/data/questions.json's dev half, keywords hit@1 0.86 -> 1.00 (lexical and hybrid),
# lexical typos 0.89 -> 1.00, chrome hit@1 0.71 -> 0.74 lexically; no kind lower, the same at
# 0.3 and 1.0. The title and headings (their best) instead did nothing for keywords.
TITLE_BOOST = 0.5
# score = s / (s + SCORE_K) for tantivy's BM25 sum s: monotonic, in [0, 1).
SCORE_K = 10.0
# A long English question's first this many pages are re-ranked by their best passage
# (mirror.search.passages). On bench/data/questions.json's dev half, questions hit@1 / hit@5 /
# MRR@10 went 0.48 / 0.81 / 0.60 -> 0.63 / 0.85 / 0.74 and agent problems 0.55 / 0.64 / 0.61
# -> 0.64 / 0.73 / 0.66; every other kind kept its figures, and tests/data/relevance.json's
# paraphrases went 0.80 -> 0.87 hit@5. 10 pages did as well on the dev half but let a
# paraphrase of that suite slip a place. With the passage weighing more than the page
# (passages.PASSAGE_WEIGHT 0.6), 20 pages beat 15 on the dev half: agent problems 0.64 / 0.73 /
# 0.66 -> 0.64 / 0.82 / 0.69 lexically, and in the hybrid tier 0.55 / 0.82 / 0.65 -> 0.64 /
# 0.82 / 0.71; other kinds kept their figures (at weight 0.5, 20 had cost other-language
# questions in ASCII a hit; no longer). The cost: long questions' p50 about 2x (bench_search),
# and 20 pages 1.3x 15 (13 against 10 ms a dev-half question, median of 5 alternating runs).
PASSAGE_POOL = 20
# How many candidates a search fetches before a `where` filter, at most, before it asks the
# store for every page that passes the filter and searches among those alone.
_MAX_CANDIDATES = 4000
# Typo correction looks at vocabulary terms sharing the first two letters, at most this many.
_MAX_SPELLING_CANDIDATES = 20_000
_PRESENT = "SELECT name FROM documents WHERE content IS NOT NULL AND name IN ({marks})"
_CONTENT = "SELECT name, content FROM documents WHERE name IN ({marks})"
# SQLite's default limit on bound parameters is 32766 (since 3.32); batches stay far below.
_BATCH = 500

Query = tantivy.Query
Occur = tantivy.Occur


class Filtered(Protocol):
    """A `where` filter on the documents, as the SQL that only the full Store can build."""

    def passing(self, names: Sequence[str]) -> set[str]:
        """The names among `names` whose documents pass the filter (and have content)."""

    def every(self) -> list[str]:
        """Every name whose document passes the filter (and has content)."""


def _score(score: float) -> float:
    return max(score / (score + SCORE_K), MIN_SCORE)


class _Builder:
    """Tantivy queries for lexical terms, tokenized as the index is."""

    def __init__(self, index: TextIndex) -> None:
        self.index = index
        self.schema = index.schema

    def field(self, field: str, tokens: Sequence[str]) -> Any:
        if len(tokens) == 1:
            return Query.term_query(self.schema, field, tokens[0], index_option="freq")
        return Query.phrase_query(self.schema, field, list(tokens))

    def anywhere(self, tokens: Sequence[str], fields: Iterable[str] = FIELDS) -> Any:
        """The tokens (one phrase) in any field, scored by their best field (weighted): a
        word's score saturates at one field's, however many fields repeat it."""
        return Query.disjunction_max_query(
            [Query.boost_query(self.field(f, tokens), WEIGHTS[f]) for f in fields],
            tie_breaker=0.0,
        )

    def each_field(self, tokens: Sequence[str], fields: Iterable[str]) -> Any:
        """The tokens (one phrase) in any field, the fields' scores summed: for an
        identifier's parts, whose weight is that they fill the title, headings and code."""
        return Query.boolean_query(
            [(Occur.Should, Query.boost_query(self.field(f, tokens), WEIGHTS[f])) for f in fields]
        )

    def gram(self, grams: Sequence[str]) -> Any:
        """A CJK run: its bigrams as a phrase in the side column (a lone character: any
        bigram that starts with it)."""
        if len(grams) == 1 and len(grams[0]) == 1:
            folded = "".join(self.index.analyze(grams[0])) or grams[0]
            return Query.regex_query(self.schema, "side", _regex_literal(folded) + ".*")
        tokens = [t for g in grams for t in self.index.analyze(g)[:1]]
        return self.field("side", tokens) if tokens else None

    def term(self, term: lexical.Term) -> Any:
        """Pages with the whole term (its words as one phrase, each CJK run's bigrams)."""
        pieces = []
        tokens = self.index.analyze(" ".join(term.plain)) if term.plain else []
        if tokens:
            pieces.append(self.anywhere(tokens))
        pieces.extend(q for g in term.grams if (q := self.gram(g)) is not None)
        if term.at and pieces:
            # `@scope`: the page writes it so, not only the word (side-column marker).
            pieces.extend(self.field("side", [m]) for m in self.index.analyze(term.at)[:1])
        if not pieces:
            return None
        if len(pieces) == 1:
            return pieces[0]
        return Query.boolean_query([(Occur.Must, q) for q in pieces])

    def word(self, word: str) -> Any:
        tokens = self.index.analyze(word)
        return self.anywhere(tokens) if tokens else None

    def all_of(self, terms: Sequence[lexical.Term]) -> Any:
        """Pages with every term. An identifier of several words (`navigator.wakeLock.request`)
        must appear whole, and ranks by its parts in the title, headings and side column too:
        of the pages that name the call, the one about it ranks above a note naming it once.
        A title holding every term adds its score (TITLE_BOOST)."""
        clauses = []
        titled = self.in_title(terms) if len(terms) > 1 else None
        if titled is not None:
            clauses.append((Occur.Should, Query.boost_query(titled, TITLE_BOOST)))
        for term in terms:
            whole = self.term(term)
            if whole is None:
                continue
            clauses.append((Occur.Must, whole))
            if " " in term.text and not term.grams:
                parts = [tokens for p in term.parts if (tokens := self.index.analyze(p))]
                clauses.extend(
                    (
                        Occur.Should,
                        Query.boost_query(self.each_field(tokens, PART_FIELDS), PART_BOOST),
                    )
                    for tokens in parts
                )
        return Query.boolean_query(clauses) if clauses else None

    def in_title(self, terms: Sequence[lexical.Term]) -> Any:
        """Pages whose title holds every term (each as one phrase); None when a term has no
        words the title could hold (a CJK run is indexed in the side column only)."""
        clauses = []
        for term in terms:
            tokens = self.index.analyze(" ".join(term.plain)) if term.plain else []
            if term.grams or not tokens:
                return None
            clauses.append((Occur.Must, self.field("title", tokens)))
        return Query.boolean_query(clauses)

    def with_title_bonus(self, query: Any, terms: Sequence[lexical.Term]) -> Any:
        """`query`, scoring also (scaled by TITLE_BOOST) on the title when it holds every
        term: all_of's bonus, for a long question's any-of match. A question may name its
        page's title ("How do I cache TF Hub models?": "Caching model downloads from TF
        Hub"), and each word scoring its best field alone ranked that page 4th, below pages
        saying "hub" and "model" more often; with it, 1st. Neutral on bench/data/
        questions.json (its questions avoid their page's title words by protocol) and on
        tests/data/relevance.json: every figure the same."""
        titled = self.in_title(terms)
        if query is None or titled is None:
            return query
        bonus = Query.boost_query(titled, TITLE_BOOST)
        return Query.boolean_query([(Occur.Should, query), (Occur.Should, bonus)])

    def any_of(self, terms: Sequence[lexical.Term]) -> Any:
        """Pages with any term, or any part of one (a word of an identifier)."""
        queries = [q for t in terms if (q := self.term(t)) is not None]
        queries += [q for p in lexical.fallback_words(terms) if (q := self.word(p)) is not None]
        if not queries:
            return None
        return Query.boolean_query([(Occur.Should, q) for q in queries])


def _regex_literal(text: str) -> str:
    # tantivy's regex syntax (the regex crate): escape every character that is not a letter.
    return "".join(c if c.isalnum() else "\\" + c for c in text)


def _present(raw: Any, names: Sequence[str], where: Filtered | None) -> set[str]:
    if where is not None:
        return where.passing(names)
    found: set[str] = set()
    for start in range(0, len(names), _BATCH):
        batch = list(names[start : start + _BATCH])
        rows = raw.execute(_PRESENT.format(marks=", ".join("?" * len(batch))), batch)
        found.update(name for (name,) in rows)
    return found


def _page(
    raw: Any,
    searcher: ShardSearcher,
    query: Any,
    need: int,
    where: Filtered | None,
    builder: _Builder,
) -> list[tuple[float, str]]:
    """The first `need` pages matching `query` that the store holds (and pass `where`), as
    (score, name), best first, ties by name."""
    count = need + 1
    while True:
        hits = searcher.search(query, count)
        names = searcher.names(hits)
        present = _present(raw, names, where)
        found = sorted(
            (
                (score, name)
                for (score, _), name in zip(hits, names, strict=True)
                if name in present
            ),
            key=lambda row: (-row[0], row[1]),
        )
        exhausted = len(hits) < count
        # Pages not fetched score <= the last one fetched: the page of results is final once
        # its last row scores strictly more (a tie could sort before it by name).
        if exhausted or (len(found) >= need and found[need - 1][0] > hits[-1][0]):
            return found[:need]
        if count >= _MAX_CANDIDATES:
            break
        count *= 4
    if where is None:
        return found[:need]  # thousands of exact ties: keep the index's order among them
    # A selective filter: search among the pages that pass it.
    allowed = where.every()
    if not allowed:
        return []
    narrowed = Query.boolean_query(
        [(Occur.Must, query), (Occur.Must, Query.term_set_query(builder.schema, "name", allowed))]
    )
    hits = searcher.search(narrowed, need)
    names = searcher.names(hits)
    present = _present(raw, names, where)
    rows = [(score, n) for (score, _), n in zip(hits, names, strict=True) if n in present]
    return sorted(rows, key=lambda row: (-row[0], row[1]))


def _correct(
    index: TextIndex, searcher: ShardSearcher, terms: list[lexical.Term]
) -> list[lexical.Term]:
    """The terms with each word that matches no page replaced by the closest term of the
    index's vocabulary (stems 1 edit apart, 2 for long ones; the most frequent wins)."""
    for word in lexical.words_of(terms):
        folded = word.casefold()
        if len(folded) < 4 or not folded.isalpha() or not folded.isascii():
            continue
        tokens = index.analyze(folded)
        if len(tokens) != 1:
            continue
        stemmed = tokens[0]
        if any(searcher.doc_freq(field, stemmed) for field in FIELDS):
            continue
        vocabulary = searcher.terms_with_prefix("body", stemmed[:2], limit=_MAX_SPELLING_CANDIDATES)
        better = lexical.closest(stemmed, vocabulary)
        if better is not None:
            terms = lexical.replace_word(terms, word, better)
    return terms


def rank_documents(
    raw: Any, index: TextIndex, query: str, *, limit: int, where: Filtered | None = None
) -> list[DocumentHit]:
    """The lexical ranking: the best `limit` documents for `query`, best first. Pages with all
    the terms first, then (when those are fewer than `limit`) pages with any term or any part of
    one; a long query ranks pages with any term from the start. `raw`: an sqlite3 connection in
    the caller's read transaction."""
    terms = lexical.query_terms(query)
    if not terms or limit <= 0:
        return []
    generation = index.generation
    try:
        return _rank(raw, index, terms, limit, where)
    except Damaged as exc:
        # Unreadable files (a garbled meta.json, a truncated segment): rebuilt from the store,
        # then the same search again (an empty answer would look real to a script or agent).
        index.repair_damage(exc, generation)
    try:
        return _rank(raw, index, terms, limit, where)
    except Damaged as exc:
        raise StoreError(
            f"the search index at {index.folder} cannot be read even rebuilt: {exc}",
            hint="check the disk it is on; `dk-mirror index rebuild` makes it again",
        ) from None


def _rank(
    raw: Any,
    index: TextIndex,
    terms: list[lexical.Term],
    limit: int,
    where: Filtered | None,
) -> list[DocumentHit]:
    searcher = index.searcher(raw)
    if searcher.num_docs == 0:
        return []
    terms = _correct(index, searcher, terms)
    builder = _Builder(index)
    hits: list[DocumentHit] = []
    seen: set[str] = set()
    either = builder.any_of(terms)
    if len(terms) >= LONG_QUERY:
        either = builder.with_title_bonus(either, terms)
    if len(terms) < LONG_QUERY:
        every = builder.all_of(terms)
        if every is not None:
            _add(hits, seen, _page(raw, searcher, every, limit, where, builder), floor=None)
    english = _english_question(terms)
    need = max(limit, PASSAGE_POOL) if english else limit
    if len(hits) < need and either is not None:
        floor = (hits[-1].score if hits else 1.0) if len(terms) < LONG_QUERY else None
        rows = _page(raw, searcher, either, need + len(hits), where, builder)
        _add(hits, seen, rows, floor=floor)
    if english:
        hits = _best_passage_first(raw, index, searcher, hits[:need], terms)
    return _untranslated_first(searcher, builder, hits[:limit], terms)


def _english_question(terms: list[lexical.Term]) -> bool:
    """Whether the query is a long one in ASCII words (a question or a problem described):
    short queries (keywords, identifiers) rank well on the page as a whole, and the index's
    stemmer is English."""
    return len(terms) >= LONG_QUERY and all(
        not t.grams and " ".join(t.plain).isascii() for t in terms
    )


def _best_passage_first(
    raw: Any,
    index: TextIndex,
    searcher: ShardSearcher,
    hits: list[DocumentHit],
    terms: list[lexical.Term],
) -> list[DocumentHit]:
    """`hits` with its first PASSAGE_POOL pages re-ranked by their best passage too
    (mirror.search.passages); positions keep their ranks and scores."""
    pool = hits[:PASSAGE_POOL]
    if len(pool) < 2:
        return hits
    typed = [w for t in terms for w in t.plain]
    stems = dict.fromkeys(s for w in typed for s in index.analyze(w)[:1])
    total = searcher.num_docs
    weights = {s: passages.idf(total, searcher.doc_freq("body", s)) for s in stems}
    names = [h.name for h in pool]
    rows = raw.execute(_CONTENT.format(marks=", ".join("?" * len(names))), names).fetchall()
    found = {name: inflate(content) or "" for name, content in rows}

    def stem(word: str) -> str | None:
        return next(iter(index.analyze(word)), None)

    contents = [found.get(n, "") for n in names]
    best = passages.best_passages(contents, weights, [*stems, *typed], stem)
    order = passages.reordered([-h.rank for h in pool], best)
    ranked = [
        DocumentHit(pool[i].name, place.rank, place.score)
        for i, place in zip(order, pool, strict=True)
    ]
    return ranked + hits[PASSAGE_POOL:]


def _add(
    hits: list[DocumentHit], seen: set[str], rows: list[tuple[float, str]], *, floor: float | None
) -> None:
    """Append the rows not seen yet; a page topped up from a looser match (`floor`: the
    score of the last page before it) never outranks one that had every term."""
    for raw_score, name in rows:
        if name not in seen:
            seen.add(name)
            score = _score(raw_score) if floor is None else min(_score(raw_score), floor)
            hits.append(DocumentHit(name, -raw_score, score))


def _untranslated_first(
    searcher: ShardSearcher, builder: _Builder, hits: list[DocumentHit], terms: list[lexical.Term]
) -> list[DocumentHit]:
    """`hits` with untranslated pages ahead of translations that hold no more of the query's
    terms (mirror.search.translations says why). Costs nothing without a translation."""
    if not any(translations.is_translation(h.name) for h in hits):
        return hits
    names = [h.name for h in hits]
    among = Query.term_set_query(builder.schema, "name", names)
    held = dict.fromkeys(names, 0)
    for term in terms:
        whole = builder.term(term)
        if whole is None:
            continue
        query = Query.boolean_query([(Occur.Must, whole), (Occur.Must, among)])
        for name in searcher.names(searcher.search(query, len(names))):
            held[name] += 1
    ordered = translations.untranslated_first(hits, lambda h: h.name, held)
    # Positions keep their ranks and scores: the list stays best first whatever moved.
    return [
        DocumentHit(hit.name, place.rank, place.score)
        for hit, place in zip(ordered, hits, strict=True)
    ]


def search(
    raw: Any,
    index: TextIndex,
    query: str,
    *,
    limit: int,
    offset: int = 0,
    where: Filtered | None = None,
) -> list[LocalHit]:
    """The best chunks for `query`, grouped by document: the lexical ranking of documents, each
    followed by its best chunks. The caller holds one read transaction around it."""
    if limit <= 0:
        return []
    offset = max(offset, 0)
    need = offset + limit
    # Every document gives at least one chunk: `need` documents always fill the page.
    documents = rank_documents(raw, index, query, limit=need, where=where)

    def contents(names: list[str]) -> dict[str, str | None]:
        marks = ", ".join("?" * len(names))
        rows = raw.execute(_CONTENT.format(marks=marks), names).fetchall()
        return {name: inflate(content) for name, content in rows}

    return grouped(documents, query, need, contents)[offset:need]
