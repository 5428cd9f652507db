"""The store's tables beyond documents: crawls, quota buckets, recordings, versions, vectors."""
