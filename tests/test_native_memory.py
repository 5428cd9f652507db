"""Native memory handed back to the operating system (mirror/store/textindex/sqlite/native_memory.py).

Each check runs in a child interpreter: glibc's malloc settings are process-wide, and the
control (glibc left as it is) needs a process that never fixed them.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow]

# In the child: free one large block, then allocate another of the same size, and print how
# many bytes glibc had mapped on their own (mallinfo2's hblkhd) while the second was held.
_CHILD = """
import ctypes, sys

class MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "fixed":
    from mirror.store.textindex.sqlite.native_memory import map_large_blocks
    map_large_blocks()
block = 1 << 20  # a tantivy arena page
libc.free(libc.malloc(block))  # glibc's dynamic threshold rises past a freed mapped block
second = libc.malloc(block)
print(libc.mallinfo2().hblkhd >= block)
libc.free(second)
"""


def _second_block_mapped(mode: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, check=True
    )
    return done.stdout.strip() == "True"


def _has_glibc_mallinfo2() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _has_glibc_mallinfo2(), reason="glibc's mallopt and mallinfo2 only")
def test_large_blocks_stay_mapped_after_one_is_freed() -> None:
    # The control: left alone, glibc serves the next large block from an arena (where it
    # stays resident after it is freed, until a trim).
    assert not _second_block_mapped("default")
    # Fixed: every large block is a mapping of its own, returned to the system when freed.
    assert _second_block_mapped("fixed")
