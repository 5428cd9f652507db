"""Search text, pure: the filter grammar, chunking, snippets, extractive answers, suggestions."""
