"""Hand memory that native code freed back to the operating system (glibc only).

Tantivy indexes on threads of its own and allocates through the C library's malloc. glibc gives
every thread that allocates an arena of its own (up to eight per core) and keeps what is freed
in each for reuse, so an import's resident memory grew with every segment tantivy built and
dropped: about 2 KB per page indexed, over 360 MB for a 100,000-page file, though what tantivy
holds at any moment is its writer heap and what it indexed since its last commit. Trimming after
each index commit (malloc_trim) keeps the process at what is in use (a 100,000-page import:
404 MB peak before, about 220 MB after, with commits every 2,000 pages). Elsewhere (macOS, musl,
Windows) it does nothing.

Between trims, glibc's dynamic mmap threshold does the same on a smaller scale: once a large
block (tantivy's 1 MB arena pages, merge buffers) has been freed, glibc raises the threshold
and serves the next ones from an arena, where freed memory stays until the next trim. A fixed
threshold (which also stops that adjustment) maps every block from LARGE_BLOCK up on its own
and unmaps it when freed: a 100,000-page import peaked 5-15 MB lower, as fast.
"""

from __future__ import annotations

import ctypes
import sys
import threading

# glibc's mallopt parameter for the mmap threshold (malloc.h), and the size it is fixed at
# (glibc starts at 128 KiB before it adjusts; 128 and 256 KiB measured the same peak).
_M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 256 << 10

_lock = threading.Lock()
_fixed = False
_libc: ctypes.CDLL | None = None
_loaded = False


def _glibc() -> ctypes.CDLL | None:
    global _libc, _loaded
    with _lock:
        if not _loaded:
            _loaded = True
            if sys.platform.startswith("linux"):
                try:
                    # The symbols already loaded into the process (its C library among them).
                    libc = ctypes.CDLL(None)
                    # musl has no malloc_trim: then nothing is called.
                    if hasattr(libc, "malloc_trim"):
                        _libc = libc
                except OSError:
                    _libc = None
        return _libc


def trim() -> None:
    """Return the free pages of every arena to the operating system."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def map_large_blocks() -> None:
    """From now on, give every allocation of LARGE_BLOCK or more a mapping of its own, handed
    back to the operating system when freed (once per process; before heavy native work)."""
    global _fixed
    libc = _glibc()
    with _lock:
        if libc is None or _fixed:
            return
        _fixed = True
    libc.mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK)
