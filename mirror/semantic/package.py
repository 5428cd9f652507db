"""Which version of a package is installed, without importing importlib.metadata.

importlib.metadata costs ~25 ms of CPU to import (email parsing, zipfile, csv...), a tenth
of a cold `search --offline` with vectors; the model's version (part of the vectors' model
key) is one line of a file beside the package.
"""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path


def installed_version(module: str, distribution: str) -> str | None:
    """The installed version of `distribution` (whose import package is `module`), as
    importlib.metadata gives it; None when it is not installed."""
    found = _beside_the_package(module)
    if found is not None:
        return found
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _beside_the_package(module: str) -> str | None:
    # The Version header of its METADATA, read directly. Only the plain case, one dist-info
    # folder beside the package; anything else (several, an egg, a zip) asks importlib.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = list(site.glob(f"{module}-*.dist-info/METADATA"))
    if len(found) != 1:
        return None
    with contextlib.suppress(OSError, UnicodeDecodeError), found[0].open(encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("Version:"):
                return line.partition(":")[2].strip() or None
            if not line.strip():
                break  # the headers ended without one
    return None
