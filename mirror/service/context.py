"""What a use case needs, and no more: the store, a way to reach upstream, the clock, settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import Settings
from ..policy import Mode

if TYPE_CHECKING:
    from ..store.api import StoreAccess
    from ..upstream import Upstream


@dataclass(frozen=True, slots=True)
class Context:
    """The narrow input every use case takes (never the whole `Mirror`)."""

    settings: Settings
    # The full Store, or for a one-thread command that reads the Reader (same interface).
    store: StoreAccess
    # Called only when a use case decides to go online; refuses in (strict) offline mode.
    upstream: Callable[[], Upstream]
    clock: Callable[[], float]
    # Unix seconds of an as-of read (`--as-of`): `store` is then the store as it was at that
    # instant (store/as_of_view.py), and nothing goes upstream.
    as_of: float | None = None

    def default_mode(self) -> Mode:
        """The mode the settings imply, for callers that did not build one."""
        return Mode(offline=self.settings.offline, max_age=self.settings.max_age)
