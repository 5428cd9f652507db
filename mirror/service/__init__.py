"""The use cases behind one typed façade, `Mirror` (facade.py): every CLI command, MCP tool and
HTTP route calls it.

Imported lazily: a process forked to rank a cold search's vectors (forked_dense.py) imports
the use cases it runs, not the whole façade and what it imports (~45 ms of CPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..policy import Mode
    from .documents import FetchInterrupted, FetchReport, GetResult, Served, prefix_form
    from .facade import Mirror
    from .imports import ImportFileReport

__all__ = [
    "FetchInterrupted",
    "FetchReport",
    "GetResult",
    "ImportFileReport",
    "Mirror",
    "Mode",
    "Served",
    "prefix_form",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import facade

        return getattr(facade, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
