"""Local full-text search: one interface, one engine per database (sqlite/: tantivy beside the
file; postgres/: tsvector columns)."""
