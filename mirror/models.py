"""Plain, frozen records in the shapes of the upstream API, with JSON converters.

No database or HTTP code here: `store/` and `upstream/` translate to and from these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from .errors import ProtocolError


class View(StrEnum):
    """DocumentView: which fields a Get/BatchGet returns."""

    BASIC = "DOCUMENT_VIEW_BASIC"
    CONTENT = "DOCUMENT_VIEW_CONTENT"
    FULL = "DOCUMENT_VIEW_FULL"


# JSON field name -> attribute name, in the order upstream documents them (and we print them).
_FIELDS: tuple[tuple[str, str], ...] = (
    ("name", "name"),
    ("uri", "uri"),
    ("content", "content"),
    ("description", "description"),
    ("dataSource", "data_source"),
    ("title", "title"),
    ("updateTime", "update_time"),
    ("view", "view"),
    ("contentLengthBytes", "content_length_bytes"),
)
_KNOWN = frozenset(json_name for json_name, _ in _FIELDS)
_STRING_FIELDS = frozenset(j for j, _ in _FIELDS if j != "contentLengthBytes")


def content_sha256(content: str) -> str:
    """Hex sha256 of a document's Markdown as UTF-8."""
    import hashlib  # here: reading cached documents never hashes (cold start)

    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def data_source_of(name: str) -> str:
    """The `dataSource` of a resource name: its host (`documents/{host}/...`)."""
    return name.split("/", 2)[1] if name.count("/") >= 1 else ""


@dataclass(frozen=True, slots=True)
class Document:
    """A Developer Knowledge Document; `None` means upstream did not send the field."""

    name: str
    uri: str | None = None
    content: str | None = None
    description: str | None = None
    data_source: str | None = None
    title: str | None = None
    update_time: str | None = None
    view: str | None = None
    content_length_bytes: int | None = None
    # Fields upstream sent that this version does not know, kept so nothing is lost.
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_api(cls, data: object) -> Document:
        """Parse one Document JSON object, refusing shapes the contract does not allow."""
        if not isinstance(data, dict):
            raise ProtocolError(f"expected a Document object, got {type(data).__name__}")
        name = data.get("name")
        if not isinstance(name, str) or not name.startswith("documents/"):
            raise ProtocolError(f"Document without a valid `name`: {str(name)[:120]!r}")
        values: dict[str, Any] = {}
        for json_name, attr in _FIELDS[1:]:
            value = data.get(json_name)
            if value is None:
                continue
            if json_name in _STRING_FIELDS and not isinstance(value, str):
                raise ProtocolError(f"{name}: `{json_name}` is not a string")
            if json_name == "contentLengthBytes":
                # int32 in the proto; JSON encoders may send it as a string (int64 style).
                try:
                    value = int(value)
                except (TypeError, ValueError):
                    raise ProtocolError(f"{name}: `contentLengthBytes` is not an integer") from None
            values[attr] = value
        extra = {k: v for k, v in data.items() if k not in _KNOWN}
        return cls(name=name, extra=extra, **values)

    def to_api(self) -> dict[str, Any]:
        """The upstream JSON object, omitting fields that are unset."""
        out: dict[str, Any] = {}
        for json_name, attr in _FIELDS:
            value = getattr(self, attr)
            if value is not None:
                out[json_name] = value
        for key in sorted(self.extra):
            out.setdefault(key, self.extra[key])
        return out

    def basic(self) -> Document:
        """This document in DOCUMENT_VIEW_BASIC: metadata only."""
        return replace(self, content=None, view=View.BASIC.value)

    def with_derived_fields(self) -> Document:
        """Fill what can be derived when a source omits it (dataSource, contentLengthBytes)."""
        data_source = self.data_source or data_source_of(self.name)
        length = self.content_length_bytes
        if length is None and self.content is not None:
            length = len(self.content.encode("utf-8"))
        return replace(self, data_source=data_source, content_length_bytes=length)


@dataclass(frozen=True, slots=True)
class CachedDocument:
    """A document as the store holds it, with what the mirror knows about the copy."""

    document: Document
    sha256: str | None
    fetched_at: float
    upstream: str
    # Newest updateTime seen in metadata (e.g. search results) since this copy was fetched.
    seen_update_time: str | None = None

    @property
    def name(self) -> str:
        """The document's resource name."""
        return self.document.name


@dataclass(frozen=True, slots=True)
class DocumentChunk:
    """A search hit: a piece of one document, with that document's metadata (BASIC view)."""

    parent: str
    id: str | None
    content: str
    document: Document | None = None
    relevance_score: float | None = None
    # Where the hit came from in this mirror (upstream, recorded or local).
    source: Source | None = None

    @classmethod
    def from_api(cls, data: object) -> DocumentChunk:
        """Parse one DocumentChunk object (REST: with `document`; MCP: parent/id/content only)."""
        if not isinstance(data, dict):
            raise ProtocolError(f"expected a DocumentChunk object, got {type(data).__name__}")
        parent, content = data.get("parent"), data.get("content", "")
        if not isinstance(parent, str) or not parent.startswith("documents/"):
            raise ProtocolError(f"DocumentChunk without a valid `parent`: {str(parent)[:120]!r}")
        if not isinstance(content, str):
            raise ProtocolError(f"{parent}: chunk `content` is not a string")
        chunk_id = data.get("id")
        document = data.get("document")
        score = data.get("relevanceScore")
        if score is not None and not isinstance(score, int | float):
            raise ProtocolError(f"{parent}: `relevanceScore` is not a number")
        return cls(
            parent=parent,
            id=chunk_id if isinstance(chunk_id, str) else None,
            content=content,
            document=Document.from_api(document) if document is not None else None,
            relevance_score=float(score) if score is not None else None,
        )

    def to_api(self) -> dict[str, Any]:
        """The upstream JSON object (without the mirror's `source`)."""
        out: dict[str, Any] = {"parent": self.parent}
        if self.id is not None:
            out["id"] = self.id
        out["content"] = self.content
        if self.document is not None:
            out["document"] = self.document.to_api()
        if self.relevance_score is not None:
            out["relevanceScore"] = self.relevance_score
        return out


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of SearchDocumentChunks results."""

    results: tuple[DocumentChunk, ...]
    next_page_token: str | None = None

    @classmethod
    def from_api(cls, data: object) -> SearchPage:
        """Parse a SearchDocumentChunksResponse (`results` may be absent when empty)."""
        if not isinstance(data, dict):
            raise ProtocolError("expected a SearchDocumentChunksResponse object")
        results = data.get("results") or []
        token = data.get("nextPageToken") or None
        if not isinstance(results, list) or (token is not None and not isinstance(token, str)):
            raise ProtocolError("SearchDocumentChunksResponse has the wrong shape")
        return cls(tuple(DocumentChunk.from_api(r) for r in results), token)

    def to_api(self) -> dict[str, Any]:
        """The upstream JSON object; `nextPageToken` omitted on the last page, as upstream does."""
        out: dict[str, Any] = {"results": [r.to_api() for r in self.results]}
        if self.next_page_token:
            out["nextPageToken"] = self.next_page_token
        return out


@dataclass(frozen=True, slots=True)
class Citation:
    """A span of the answer text (UTF-8 byte offsets) and the references supporting it."""

    start_index: int
    end_index: int
    reference_indexes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    """An AnswerQuery answer: text, citations (REST only) and the referenced chunks."""

    answer_text: str
    citations: tuple[Citation, ...] = ()
    references: tuple[DocumentChunk, ...] = ()

    @classmethod
    def from_api(cls, data: object) -> Answer:
        """Parse an AnswerQueryResponse (`{"answer": {...}}`) or a bare Answer object."""
        if isinstance(data, dict) and isinstance(data.get("answer"), dict):
            data = data["answer"]
        if not isinstance(data, dict) or not isinstance(data.get("answerText", ""), str):
            raise ProtocolError("expected an AnswerQueryResponse with `answer.answerText`")
        citations = []
        for c in data.get("citations") or []:
            if not isinstance(c, dict):
                raise ProtocolError("an answer citation is not an object")
            sources = tuple(int(s.get("referenceIndex", 0)) for s in c.get("sources") or [])
            # proto3 JSON omits zero values, so a missing startIndex means 0.
            citations.append(
                Citation(int(c.get("startIndex", 0)), int(c.get("endIndex", 0)), sources)
            )
        references = []
        for r in data.get("references") or []:
            chunk = (
                (r.get("documentReference") or {}).get("documentChunk")
                if isinstance(r, dict)
                else None
            )
            if chunk is None:
                raise ProtocolError("an answer reference has no documentReference.documentChunk")
            references.append(DocumentChunk.from_api(chunk))
        return cls(str(data.get("answerText", "")), tuple(citations), tuple(references))

    def to_api(self) -> dict[str, Any]:
        """The AnswerQueryResponse JSON upstream returns over REST."""
        return {
            "answer": {
                "answerText": self.answer_text,
                "citations": [
                    {
                        "startIndex": c.start_index,
                        "endIndex": c.end_index,
                        "sources": [{"referenceIndex": i} for i in c.reference_indexes],
                    }
                    for c in self.citations
                ],
                "references": [
                    {"documentReference": {"documentChunk": r.to_api()}} for r in self.references
                ],
            }
        }

    @property
    def reference_names(self) -> list[str]:
        """Names of the referenced documents, first mention first, without repeats."""
        return list(dict.fromkeys(r.parent for r in self.references))


class Source(StrEnum):
    """Where a served document, search page or answer came from in this mirror."""

    CACHE = "cache"  # a fresh copy in the store
    UPSTREAM = "upstream"  # fetched (or asked) just now
    STALE = "stale"  # an old copy, served offline or because upstream failed
    RECORDED = "recorded"  # an upstream search page or answer recorded earlier
    LOCAL = "local"  # the local full-text index
    EXTRACTIVE = "extractive"  # sentences quoted from local hits (offline answers)


def rfc3339(epoch: float | None) -> str | None:
    """Unix seconds as RFC 3339 UTC (`2026-01-02T03:04:05.678Z`), the API's timestamp form."""
    if epoch is None:
        return None
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class BucketState:
    """One upstream quota bucket's pacing state, shared through the store by every process.

    The rule that reads and moves it is mirror/upstream/pacing.py (`reserve`, `slow_down`).
    """

    tat: float  # "theoretical arrival time": when the bucket is next empty, in clock seconds
    factor: float = 1.0  # the share of the quota's rate in force after a 429 (1: full rate)
    slowed_at: float = 0.0  # when `factor` was last lowered; it climbs back from then on


@dataclass(frozen=True, slots=True)
class Summary:
    """One line of a listing: a document's metadata without its content."""

    name: str
    title: str | None
    data_source: str | None
    update_time: str | None
    content_length_bytes: int | None
    has_content: bool
    fetched_at: float

    def to_json(self) -> dict[str, Any]:
        """The listing line as `ls --json` prints it."""
        return {
            "name": self.name,
            "title": self.title,
            "dataSource": self.data_source,
            "updateTime": self.update_time,
            "contentLengthBytes": self.content_length_bytes,
            "hasContent": self.has_content,
            "fetchedAt": rfc3339(self.fetched_at),
        }


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts and sizes of the store.

    `documents` counts every row, `with_content` those that can be read; the rest are
    metadata-only rows noted from search results (known to exist, not mirrored).
    """

    documents: int
    with_content: int
    content_bytes: int
    oldest_fetch: float | None
    newest_fetch: float | None
    by_data_source: dict[str, int]

    @property
    def metadata_only(self) -> int:
        """Rows known only from search results: a name and metadata, no content."""
        return self.documents - self.with_content

    def describe(self) -> str:
        """The counts as every display words them: readable documents first, the rest apart."""
        text = f"{self.with_content:,} document{'' if self.with_content == 1 else 's'}"
        if self.metadata_only:
            text += f" (+{self.metadata_only:,} known from search results, metadata only)"
        return text

    def to_json(self) -> dict[str, Any]:
        """The counts as `status --json` prints them."""
        return {
            "documents": self.documents,
            "withContent": self.with_content,
            "metadataOnly": self.metadata_only,
            "contentBytes": self.content_bytes,
            "oldestFetch": rfc3339(self.oldest_fetch),
            "newestFetch": rfc3339(self.newest_fetch),
            "byDataSource": self.by_data_source,
        }


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What the store reports about itself: where it is and what state it is in."""

    url: str
    dialect: str
    revision: str | None
    expected_revision: str
    journal_mode: str | None  # SQLite only
    search_index: bool
    integrity: tuple[str, ...] | None = None  # quick_check problems; None when not checked
    # Opened immutable (a read-only folder): SQLite reads the file alone; journals unseen.
    immutable: bool = False

    def to_json(self) -> dict[str, Any]:
        """The store's facts as `status --json` and `doctor --json` print them."""
        return {
            "store": self.url,
            "database": self.dialect,
            "schemaRevision": self.revision,
            "expectedRevision": self.expected_revision,
            "journalMode": self.journal_mode,
            "searchIndex": self.search_index,
            "integrity": None if self.integrity is None else list(self.integrity),
            "immutable": self.immutable,
        }


@dataclass(frozen=True, slots=True)
class Health:
    """One report on the store and the configuration: `status`, `doctor` and the web status."""

    store: StoreFacts
    stats: Stats
    upstream: str
    transport: str
    offline: bool
    api_key_set: bool
    sqlite_version: str

    def to_json(self) -> dict[str, Any]:
        """The whole report as JSON (the key is never included, only whether it is set)."""
        return {
            **self.store.to_json(),
            **self.stats.to_json(),
            "upstream": self.upstream,
            "transport": self.transport,
            "offline": self.offline,
            "apiKeySet": self.api_key_set,
            "sqliteVersion": self.sqlite_version,
        }


@dataclass(frozen=True, slots=True)
class PutReport:
    """What a streamed write stored: distinct documents, and repeats of a name (last one won)."""

    documents: int
    duplicates: int

    def to_json(self) -> dict[str, Any]:
        """As `import --json` prints it."""
        return {"imported": self.documents, "duplicates": self.duplicates}


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a document in the store's history (`number` counts from 1 per name)."""

    name: str
    number: int
    sha256: str
    update_time: str | None
    fetched_at: float
    upstream: str
    current: bool = False
    gone_since: float | None = None  # set on the current version when upstream lost it

    def to_json(self) -> dict[str, Any]:
        """As `history --json` prints each version."""
        return {
            "version": self.number,
            "sha256": f"sha256:{self.sha256}",
            "updateTime": self.update_time,
            "fetchedAt": rfc3339(self.fetched_at),
            "upstream": self.upstream,
            "current": self.current,
        }


@dataclass(frozen=True, slots=True)
class Observed:
    """A document as the store held it at a past instant (an as-of read): the version current
    then, and its metadata (with its content when the read asked for it)."""

    version: Version  # its number, hash, when this content was first fetched, and from where
    document: Document


@dataclass(frozen=True, slots=True)
class AsOf:
    """What an as-of read found: documents as they were then, in name order, and the names
    whose version of then was pruned from the history (known to have existed, not kept)."""

    observed: list[Observed]
    pruned: list[str]


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a refresh compares with upstream's BASIC view: a stored copy without its content."""

    name: str
    update_time: str | None
    content_length_bytes: int | None
    checked_at: float  # the last fetch or refresh check (or gone check) of this copy
