"""Tables that record what upstream answered, so searches and answers replay offline."""

from __future__ import annotations

from sqlalchemy import Column, Float, Integer, String, Table, Text

from .tables import metadata

# One row per upstream SearchDocumentChunks page, keyed by the normalised request.
search_pages = Table(
    "search_pages",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("query", Text, nullable=False),
    Column("filter", Text),
    Column("page_size", Integer, nullable=False),
    Column("page_token", Text),
    # The SearchDocumentChunksResponse as canonical JSON.
    Column("response_json", Text, nullable=False),
    Column("upstream", Text, nullable=False),
    Column("recorded_at", Float, nullable=False),
)

# One row per answered question (query + filter), the latest answer wins.
answers = Table(
    "answers",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("query", Text, nullable=False),
    Column("filter", Text),
    # The AnswerQueryResponse as canonical JSON.
    Column("answer_json", Text, nullable=False),
    # [{"name": ..., "sha256": ...}] of the cited documents when the answer was recorded.
    Column("references_json", Text, nullable=False),
    Column("upstream", Text, nullable=False),
    Column("recorded_at", Float, nullable=False),
)

# Calls counted against upstream quotas that outlive a process (AnswerQuery: 50 per day).
quota_usage = Table(
    "quota_usage",
    metadata,
    Column("bucket", String(40), primary_key=True),
    Column("period", String(20), primary_key=True),
    Column("used", Integer, nullable=False),
)

# One token bucket per upstream quota, shared by every process on the store (GCRA state:
# mirror/upstream/pacing.py). Keyed by the upstream URL too: two upstreams, two quotas.
quota_buckets = Table(
    "quota_buckets",
    metadata,
    Column("upstream", String(400), primary_key=True),
    Column("bucket", String(40), primary_key=True),
    # When the bucket is next empty (Unix time, seconds): each call moves it on one interval.
    Column("tat", Float, nullable=False),
    # The share of the quota's rate in force after a 429, and when it was lowered.
    Column("rate_factor", Float, nullable=False),
    Column("slowed_at", Float, nullable=False),
)
