"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers.

uvicorn times out a keep-alive connection only while it is idle after an answer: a connection
that never sends a request, or sends part of the headers and stops (half-open, slowloris),
was held forever (1,100 held for 70 s in the issue 9 probe). Here the headers of every
request must arrive complete within HEADER_SECONDS of its first byte (or of the connection).
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("mirror.serve")

# Seconds a client has to send a request's complete headers: a real client sends them in one
# write, so this only ever closes connections that stalled or never meant to send a request.
HEADER_SECONDS = 10.0


class HeaderDeadlineProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers do not finish in time."""

    header_seconds = HEADER_SECONDS
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request's headers."""
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Parse as usual; then the clock runs only while a request's headers are incomplete."""
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm()  # part of the next request's headers: a clock already running keeps going
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_seconds, self._expired)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expired(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.info("closed a connection whose request headers took over %ss", self.header_seconds)
            self.transport.close()
