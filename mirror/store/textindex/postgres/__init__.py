"""PostgreSQL's search index: tsvector columns of search_docs, ranked by ts_rank."""
