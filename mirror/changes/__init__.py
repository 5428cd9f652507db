"""What changed: the change log's events, and classifying a change between two versions."""
