"""Canonical JSON: equal data, equal bytes (snapshots, recordings, hashes)."""

from __future__ import annotations

import hashlib
import json

# Built once: json.dumps with options constructs a new encoder on every call, and snapshots
# encode a few small objects per document.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(obj: object) -> str:
    """The one JSON text dk-mirror writes for `obj` (sorted keys, no spaces, UTF-8 kept)."""
    return _ENCODER.encode(obj)


def sha256_tag(data: bytes) -> str:
    """`sha256:<hex>` of `data`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
