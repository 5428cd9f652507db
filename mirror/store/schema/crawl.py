"""Crawl state: each crawl's description, its frontier, and names upstream does not have.

Kept in the store so a crawl survives any interruption: the frontier changes in the same
transaction as the documents of the batch that changed it.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Index, Integer, String, Table, Text

from .tables import NAME, metadata

# One row per distinct crawl (seeds, scopes, searches, limits): the same command finds its row.
crawls = Table(
    "crawls",
    metadata,
    Column("id", Integer, primary_key=True),
    # sha256 of the crawl's canonical description.
    Column("key", String(64), nullable=False, unique=True),
    # The description as canonical JSON (seeds, prefixes, searches, depth, max docs).
    Column("spec_json", Text, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # Set when a pass ended with nothing queued or failed; the next run starts a new pass.
    Column("finished_at", Float),
    # 1 once this pass's search discovery is in the frontier.
    Column("searched", Integer, nullable=False),
    # The next discovery order number: the frontier is walked by (depth, seq).
    Column("next_seq", Integer, nullable=False),
)

crawl_frontier = Table(
    "crawl_frontier",
    metadata,
    Column(
        "crawl_id",
        Integer,
        ForeignKey("crawls.id", ondelete="CASCADE", name="fk_crawl_frontier_crawl"),
        primary_key=True,
    ),
    Column("name", NAME, primary_key=True),
    # Link hops from a seed (seeds and search results: 0).
    Column("depth", Integer, nullable=False),
    Column("seq", Integer, nullable=False),
    # queued | fetched | had | unchanged | missing | failed (mirror/crawl/frontier.py State).
    Column("state", String(10), nullable=False),
    # Where the name was found: "seed", "search: QUERY", or the name of the linking page.
    Column("found_from", Text, nullable=False),
    Index("ix_crawl_frontier_walk", "crawl_id", "state", "depth", "seq"),
)

# Names upstream answered NOT_FOUND for, shared by every crawl: not asked for again until
# a crawl says --retry-missing or the answer is older than its --missing-max-age.
missing_documents = Table(
    "missing_documents",
    metadata,
    Column("name", NAME, primary_key=True),
    Column("first_missing_at", Float, nullable=False),
    Column("checked_at", Float, nullable=False),
)
