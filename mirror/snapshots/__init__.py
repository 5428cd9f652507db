"""Reproducible-docs formats, pure: snapshot files, deltas and diffs, lock files, Markdown paths."""
