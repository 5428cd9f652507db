"""SQLite's search index: a tantivy index in a folder beside the store file."""
