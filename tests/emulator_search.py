"""Search for the test emulator in ``emulator.py``: chunking, scoring, paging, answers, filters.

`SearchSurface` is mixed into `Emulator`, which supplies the corpus, the caches and the calls this
code makes (`_charge`, `_render`). `_Filter` parses the AIP-160 subset the upstream accepts.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

if __package__:
    from .emulator_http import ApiError
else:  # loaded as a top-level module (pytest's rootdir-relative import of tests/)
    from emulator_http import ApiError

_WORD = re.compile(r"[a-z0-9]+")
# fmt: off
_STOP = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i",
    "in", "is", "it", "its", "of", "on", "or", "the", "to", "use", "using", "what", "when", "where",
    "which", "who", "why", "with", "you", "your",
})
# fmt: on
_HEADING = re.compile(r"^#{1,6}\s")


@dataclass
class Hit:
    """One matching chunk of a search, with its score in [0, 1]."""

    score: float
    doc: dict[str, Any]
    chunk_id: str
    content: str


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp (a trailing Z allowed) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _chunk(content: str, low: int = 1024, high: int = 2048) -> list[str]:
    """Split Markdown at headings (outside code fences) into pieces of about low..high chars."""
    sections: list[str] = []
    current: list[str] = []
    fenced = False
    for line in content.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and _HEADING.match(line) and current:
            sections.append("".join(current))
            current = []
        current.append(line)
    sections.append("".join(current))
    pieces: list[str] = []
    for section in sections:
        while len(section) > high:
            cut = max(section.rfind("\n\n", low, high), section.rfind("\n", low, high))
            cut = cut if cut > 0 else high
            pieces.append(section[:cut])
            section = section[cut:]
        pieces.append(section)
    chunks: list[str] = []
    buffer = ""
    for piece in pieces:
        if buffer and len(buffer) + len(piece) > high:
            chunks.append(buffer)
            buffer = ""
        buffer += piece
        if len(buffer) >= low:
            chunks.append(buffer)
            buffer = ""
    chunks.append(buffer)
    return [c.strip() for c in chunks if c.strip()]


@functools.lru_cache(maxsize=8192)
def _indexed(content: str) -> tuple[tuple[str, ...], tuple[Counter[str], ...]]:
    """`content`'s chunks and each chunk's word counts. Cached by content for the whole test
    process: every emulator serves the same corpus pages, and chunking them all costs about a
    second, which each test that searches paid again. Read-only (a Counter read of a missing
    word inserts nothing)."""
    chunks = tuple(_chunk(content))
    return chunks, tuple(Counter(_words(c)) for c in chunks)


def _first_sentence(text: str) -> str:
    lines = [line.strip() for line in text.splitlines()]
    prose = [
        line for line in lines if line and not line.startswith(("#", "```", "{%", "<", "|", "---"))
    ]
    flat = " ".join(prose or [line.lstrip("#").strip() for line in lines if line])
    match = re.match(r"(.{10,300}?[.!?])(?:\s|$)", flat)
    if match:
        return match.group(1)
    return flat[:200] + ("..." if len(flat) > 200 else "")


class _Filter:
    """AIP-160 subset: comparisons on four fields, NOT/-, OR (binds tighter), AND, parentheses."""

    TOKEN = re.compile(
        r'\s*(?:("(?:[^"\\]|\\.)*")|(<=|>=|!=|=|<|>)|([()\-])|([A-Za-z_][A-Za-z0-9_.]*|\d+))'
    )
    STRING_FIELDS: ClassVar[dict[str, str]] = {"data_source": "dataSource", "uri": "uri"}

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.rstrip()
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ApiError(400, f"Invalid filter: unexpected character at position {pos}.")
            index = m.lastindex or 4
            self.tokens.append((("str", "op", "punct", "word")[index - 1], m.group(index)))
            pos = m.end()
        self.pos = 0

    @classmethod
    def compile(cls, text: str) -> Callable[[dict[str, Any]], bool]:
        """Parse `text` into a predicate over stored documents; ApiError(400) if it is invalid."""
        parser = cls(text)
        predicate = parser.conjunction()
        if parser.pos != len(parser.tokens):
            raise ApiError(400, f"Invalid filter: unexpected {parser.tokens[parser.pos][1]!r}.")
        return predicate

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise ApiError(400, "Invalid filter: unexpected end of expression.")
        self.pos += 1
        return token

    def conjunction(self) -> Callable[[dict[str, Any]], bool]:
        parts = [self.disjunction()]
        while (token := self.peek()) is not None and token != ("punct", ")"):
            if token == ("word", "AND"):
                self.take()
            parts.append(self.disjunction())  # juxtaposition is an implicit AND in AIP-160
        return parts[0] if len(parts) == 1 else (lambda doc: all(p(doc) for p in parts))

    def disjunction(self) -> Callable[[dict[str, Any]], bool]:
        parts = [self.unary()]
        while self.peek() == ("word", "OR"):
            self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else (lambda doc: any(p(doc) for p in parts))

    def unary(self) -> Callable[[dict[str, Any]], bool]:
        if self.peek() in (("word", "NOT"), ("punct", "-")):
            self.take()
            inner = self.unary()
            return lambda doc: not inner(doc)
        if self.peek() == ("punct", "("):
            self.take()
            inner = self.conjunction()
            if self.take() != ("punct", ")"):
                raise ApiError(400, "Invalid filter: expected ')'.")
            return inner
        return self.comparison()

    def comparison(self) -> Callable[[dict[str, Any]], bool]:
        kind, name = self.take()
        op_kind, op = self.take()
        value_kind, raw = self.take()
        if kind != "word" or op_kind != "op" or value_kind not in ("str", "word"):
            raise ApiError(400, f"Invalid filter near {name!r}: expected FIELD OPERATOR VALUE.")
        try:
            value: Any = json.loads(raw) if value_kind == "str" else raw
        except ValueError:
            raise ApiError(400, f"Invalid filter: bad string literal {raw}.") from None
        if name in self.STRING_FIELDS:
            if op not in ("=", "!=") or value_kind != "str":
                raise ApiError(
                    400, f'Invalid filter: {name} supports only = and != with a "quoted" value.'
                )
            key = self.STRING_FIELDS[name]
            return (lambda d: d[key] == value) if op == "=" else (lambda d: d[key] != value)
        if name == "content_length_bytes":
            try:
                number = int(value)
            except ValueError:
                raise ApiError(400, f"Invalid filter: {raw} is not an integer.") from None
            return _compare(op, lambda d: d["contentLengthBytes"], number)
        if name == "update_time":
            try:
                moment = parse_time(value)
                if value_kind != "str" or moment.tzinfo is None:
                    raise ValueError(value)
            except ValueError:
                raise ApiError(
                    400, f"Invalid filter: {raw} is not an RFC 3339 timestamp."
                ) from None
            return _compare(op, lambda d: parse_time(d["updateTime"]), moment)
        raise ApiError(400, f"Invalid filter: unknown field {name!r}.")


def _compare(
    op: str, get: Callable[[dict[str, Any]], Any], value: Any
) -> Callable[[dict[str, Any]], bool]:
    tests: dict[str, Callable[[Any], bool]] = {
        "=": lambda x: x == value,
        "!=": lambda x: x != value,
        "<": lambda x: x < value,
        "<=": lambda x: x <= value,
        ">": lambda x: x > value,
        ">=": lambda x: x >= value,
    }
    check = tests[op]
    return lambda doc: check(get(doc))


class SearchSurface:
    """Answers searchDocumentChunks and answerQuery over the documents `Emulator` holds."""

    # Supplied by Emulator; declared for readers.
    _lock: Any
    _docs: dict[str, dict[str, Any]]
    _version: int
    _results: dict[tuple[Any, ...], list[Hit]]

    @staticmethod
    def _filter(text: str | None) -> Callable[[dict[str, Any]], bool] | None:
        if not text or not text.strip():
            return None
        if len(text) > 500:
            raise ApiError(400, "filter must be at most 500 characters.")
        return _Filter.compile(text)

    def _search_page(self, query: dict[str, list[str]]) -> dict[str, Any]:
        text = query.get("query", [""])[0]
        if not text.strip():
            raise ApiError(400, "query is required.")
        if len(text) > 500:
            raise ApiError(400, "query must be at most 500 characters.")
        raw_size = query.get("pageSize", ["0"])[0] or "0"
        try:
            size = int(raw_size)
        except ValueError:
            raise ApiError(
                400, f"Invalid value at 'page_size' (TYPE_INT32), \"{raw_size}\""
            ) from None
        if size < 0:
            raise ApiError(400, "page_size must not be negative.")
        size = min(size or 5, 100)
        filter_text = query.get("filter", [""])[0]
        self._filter(filter_text)  # a bad filter is a 400 that costs no quota
        fingerprint = hashlib.sha256(f"{text}\0{filter_text}".encode()).hexdigest()[:12]
        offset = 0
        token = query.get("pageToken", [""])[0]
        if token:
            try:
                raw_offset, seen = (
                    base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode().split("|")
                )
                offset = int(raw_offset)
            except ValueError:
                raise ApiError(400, "Invalid page token.") from None
            if seen != fingerprint:
                raise ApiError(
                    400, "Invalid page token: it belongs to a different query or filter."
                )
        self._charge("search")
        hits = self._search(text, filter_text)
        results = [
            {
                "parent": h.doc["name"],
                "id": h.chunk_id,
                "content": h.content,
                "document": self._render(h.doc, "DOCUMENT_VIEW_BASIC"),
                "relevanceScore": h.score,
            }
            for h in hits[offset : offset + size]
        ]
        page: dict[str, Any] = {"results": results}
        if offset + size < len(hits):
            page["nextPageToken"] = base64.urlsafe_b64encode(
                f"{offset + size}|{fingerprint}".encode()
            ).decode()
        return page

    def _search(self, text: str, filter_text: str | None) -> list[Hit]:
        """Every matching chunk, best first: term-frequency score in [0, 1]; ties by name, chunk."""
        predicate = self._filter(filter_text)
        words = list(dict.fromkeys(_words(text)))
        terms = [w for w in words if w not in _STOP] or words
        with self._lock:
            key = (tuple(terms), filter_text or "", self._version)
            if (
                key in self._results
            ):  # a client walking pages asks the same question again and again
                return self._results[key]
            found: list[tuple[float, str, int, Hit]] = []
            for name in sorted(self._docs) if terms else ():
                doc = self._docs[name]
                if predicate is not None and not predicate(doc):
                    continue
                title = Counter(_words(doc["title"]))
                for index, (content, counts) in enumerate(
                    zip(*_indexed(doc["content"]), strict=True)
                ):
                    matched = sum(1 for t in terms if counts[t] or title[t])
                    if not matched:
                        continue
                    tf = sum(min(counts[t], 20) + 2 * min(title[t], 3) for t in terms)
                    score = round(0.7 * matched / len(terms) + 0.3 * tf / (tf + 10), 6)
                    found.append((-score, name, index, Hit(score, doc, f"c{index}", content)))
            found.sort(key=lambda item: item[:3])
            if len(self._results) >= 16:
                self._results.pop(next(iter(self._results)))
            hits = self._results[key] = [item[3] for item in found]
            return hits

    def _answer(self, text: str, filter_text: str | None) -> dict[str, Any]:
        """A deterministic 'grounded' answer from the top three chunks; citations in UTF-8 bytes."""
        answer, citations, references = "", [], []
        for index, hit in enumerate(self._search(text, filter_text)[:3]):
            source = hit.doc["title"] or hit.doc["name"]
            part = f"According to {source}: {_first_sentence(hit.content)}"
            answer += " " if answer else ""
            start = len(answer.encode())
            answer += part
            citations.append(
                {
                    "startIndex": start,
                    "endIndex": len(answer.encode()),
                    "sources": [{"referenceIndex": index}],
                }
            )
            chunk = {
                "parent": hit.doc["name"],
                "content": hit.content,
                "document": self._render(hit.doc, "DOCUMENT_VIEW_BASIC"),
            }
            references.append({"documentReference": {"documentChunk": chunk}})
        if not answer:
            answer = "I could not find documentation that answers this question."
        return {"answerText": answer, "citations": citations, "references": references}

    def _answer_query(self, payload: Any, body: bytes) -> dict[str, Any]:
        if body and not isinstance(payload, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        payload = payload or {}
        unknown = sorted(set(payload) - {"query", "filter"})
        if unknown:
            raise ApiError(
                400,
                f'Invalid JSON payload received. Unknown name "{unknown[0]}": Cannot find field.',
            )
        text = payload.get("query")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "query is required.")
        if len(text) > 500:
            raise ApiError(400, "query must be at most 500 characters.")
        filter_text = payload.get("filter")
        if filter_text is not None and not isinstance(filter_text, str):
            raise ApiError(400, "filter must be a string.")
        self._filter(filter_text)  # a bad filter is a 400 that costs no quota
        self._charge("answer")
        return {"answer": self._answer(text, filter_text)}
