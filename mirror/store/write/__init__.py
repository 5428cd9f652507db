"""The bulk write pipeline: batches prepared off the writer's thread, streamed in name order."""
