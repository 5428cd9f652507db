"""Answer use case: upstream AnswerQuery under a local daily quota, recorded for offline replay."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING

from .. import limits
from ..errors import MirrorError, QuotaExceeded, UpstreamError
from ..models import Answer, Source, rfc3339
from ..policy import Mode
from ..search import extractive, filters
from . import documents
from .context import Context

if TYPE_CHECKING:
    from ..models import CachedDocument
    from ..store.tables.recorded import RecordedAnswer
    from ..store.textindex.ranking import DocumentHit

QUOTA_BUCKET = "answerQuery"
# How many local hits an extractive answer may quote from.
EXTRACT_FROM = 8


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """An answer and where it came from: "upstream", "recorded" or "extractive"."""

    answer: Answer
    source: Source
    stale_names: list[str] = field(default_factory=list)
    recorded_at: float | None = None
    warnings: list[str] = field(default_factory=list)
    quota_used: int | None = None
    quota_limit: int | None = None

    @property
    def stale(self) -> bool:
        """True when a cited document changed since the answer was recorded."""
        return bool(self.stale_names)

    def to_api(self) -> dict[str, object]:
        """The AnswerQueryResponse JSON."""
        return self.answer.to_api()

    def to_json(self, held: Sequence[documents.Served] = ()) -> dict[str, object]:
        """`answer --json`: the upstream JSON, plus where it came from under `_mirror`, with
        the store's copy of each page it cites (`held`: Mirror.provenance), as a search's."""
        return {
            **self.answer.to_api(),
            "_mirror": {
                "source": str(self.source),
                "stale": self.stale,
                "staleDocuments": self.stale_names,
                "recordedAt": rfc3339(self.recorded_at),
                "quota": {"used": self.quota_used, "limit": self.quota_limit},
                "documents": [s.to_json() for s in held],
            },
        }


def _pacific() -> tzinfo:
    # Google's daily quotas reset at midnight Pacific time.
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo("America/Los_Angeles")
    except Exception:  # no tz database on this machine: standard time is close enough
        return timezone(timedelta(hours=-8))


def quota_day(now: float) -> str:
    """The quota period (a Pacific-time date) that the instant `now` falls in."""
    return datetime.fromtimestamp(now, UTC).astimezone(_pacific()).date().isoformat()


def answer_key(query: str, filter_text: str | None) -> str:
    """Stable key for recording: the same words and filter give the same key."""
    basis = {"q": " ".join(query.lower().split()), "f": filter_text}
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()


def extractive_request(
    ctx: Context, query: str, filter_text: str | None
) -> tuple[str, filters.Node | None] | None:
    """The question and filter an offline `answer` ranks the local pages by (its extractive
    answer), or None when an answer recorded for them serves it and nothing is ranked."""
    text = limits.check_query(query, what="question")
    node = filters.parse(filter_text)
    canonical = filters.to_text(node) if node is not None else None
    if ctx.store.recordings.answer(answer_key(text, canonical)) is not None:
        return None
    return text, node


def answer(ctx: Context, query: str, *, filter_text: str | None, mode: Mode) -> AnswerResult:
    """Answer a question: upstream (counted against the daily quota) or from what is local.

    `mode.prefer_recorded`: online, a recorded answer to the same question is served without
    spending the daily quota (a server in cache-first mode).
    """
    text = limits.check_query(query, what="question")
    node = filters.parse(filter_text)
    canonical = filters.to_text(node) if node is not None else None
    key = answer_key(text, canonical)
    recorded = ctx.store.recordings.answer(key)
    if mode.offline or (mode.prefer_recorded and recorded):
        return _recorded(ctx, recorded) if recorded else _extractive(ctx, text, node)
    try:
        # The client first: with no key there is nothing to send, so no quota is spent.
        upstream = ctx.upstream()
    except MirrorError as exc:
        return _local_instead(ctx, exc, recorded, text, node)
    limit = ctx.settings.answers_per_day
    day = quota_day(ctx.clock())
    used = ctx.store.recordings.take_quota(QUOTA_BUCKET, day, limit)
    if used is None:
        message = f"the daily AnswerQuery quota ({limit}/day, counted locally) is used up for {day}"
        if recorded:
            result = _recorded(ctx, recorded)
            result.warnings.append(message + "; served the recorded answer instead")
            return result
        raise QuotaExceeded(
            message + "; the request was not sent",
            hint="use `dk-mirror search` (it has its own quota), or raise "
            "DK_MIRROR_ANSWERS_PER_DAY if your project's quota is larger",
        )
    try:
        reply = upstream.answer_query(text, filter=canonical)
    except MirrorError as exc:
        return _local_instead(ctx, exc, recorded, text, node)
    warnings = _fetch_references(ctx, reply)
    cited = _hashes(ctx, reply.reference_names)
    ctx.store.recordings.save_answer(
        key,
        {"query": text, "filter": canonical},
        reply,
        cited,
        at=ctx.clock(),
        upstream=upstream.label,
    )
    return AnswerResult(
        reply, Source.UPSTREAM, warnings=warnings, quota_used=used, quota_limit=limit
    )


def _local_instead(
    ctx: Context,
    exc: MirrorError,
    recorded: RecordedAnswer | None,
    text: str,
    node: filters.Node | None,
) -> AnswerResult:
    """The recorded or extractive answer when upstream cannot be asked (no key, down, over
    quota), with a warning saying so; any other failure is raised."""
    from .search import why_local

    reason = why_local(ctx, exc)
    if reason is None:
        raise exc
    result = _recorded(ctx, recorded) if recorded else _extractive(ctx, text, node)
    result.warnings.insert(0, f"{reason}: answered from the local store instead")
    return result


def _fetch_references(ctx: Context, reply: Answer) -> list[str]:
    names = reply.reference_names
    if not names:
        return []
    try:
        report = documents.fetch(ctx, names, ctx.default_mode())
    except UpstreamError as exc:
        return [f"could not fetch the cited documents: {exc.message}"]
    if report.error or report.missing:
        return [
            f"cited documents: {report.fetched} fetched, {len(report.missing)} missing"
            + (f"; {report.error.message}" if report.error else "")
        ]
    return []


def _hashes(ctx: Context, names: list[str]) -> dict[str, str | None]:
    cached = ctx.store.get_many(names)
    return {n: cached[n].sha256 if n in cached else None for n in names}


def _recorded(ctx: Context, recorded: RecordedAnswer) -> AnswerResult:
    now = _hashes(ctx, list(recorded.cited))
    changed = [n for n, digest in recorded.cited.items() if now.get(n) != digest]
    warnings = []
    if changed:
        warnings.append(
            f"stale: {len(changed)} cited document(s) changed since this answer was recorded"
        )
    return AnswerResult(
        recorded.answer,
        Source.RECORDED,
        stale_names=changed,
        recorded_at=recorded.recorded_at,
        warnings=warnings,
    )


def _extractive(ctx: Context, query: str, node: filters.Node | None) -> AnswerResult:
    # The pages in the order `search --offline` ranks them (hybrid when the semantic tier is
    # on, the page naming an API first), each with its best chunks: the answer leads with
    # the page search ranks first.
    from . import search

    read: dict[str, CachedDocument] = {}  # each page read once: to rank, group and quote
    ranking = ranked(ctx, query, node, read)
    chunks, _ = search.grouped_page(ctx, query, ranking, offset=0, size=EXTRACT_FROM, read=read)
    passages = [
        extractive.Passage(
            c.parent, c.content, read[c.parent].document if c.parent in read else None
        )
        for c in chunks
    ]
    return AnswerResult(
        extractive.build(query, passages),
        Source.EXTRACTIVE,
        warnings=["no recorded answer: quoted the local mirror instead"],
    )


def ranked(
    ctx: Context,
    query: str,
    node: filters.Node | None,
    read: dict[str, CachedDocument] | None = None,
) -> list[DocumentHit]:
    """The pages an extractive answer quotes from, best first: `search --offline`'s ranking
    (service.ranking.local_ranking, which fills `read`), so the answer's first citation is
    search's first result."""
    from .ranking import local_ranking

    return local_ranking(ctx, query, limit=EXTRACT_FROM, node=node, read=read)
