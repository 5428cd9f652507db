"""Between stdio and the MCP server: end of input waits until every request read is answered,
and a line that is not a JSON-RPC message gets JSON-RPC's error answer.

The SDK's stdio transport closes the server's input at end of input, and the server then
cancels the calls still running: 101 requests written and stdin closed left 57 unanswered.
It also hands a line it cannot parse to the server as an exception, which answers nothing: a
client waits for ever. JSON-RPC 2.0 answers it with id null: -32700 for text that is not JSON,
-32600 for JSON that is not a request.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from pydantic import ValidationError

log = logging.getLogger("mirror.serve")

# Seconds after end of input that requests still running may take to finish. Every call has
# its own bounds (upstream timeouts and retry deadline); this only stops a stuck process.
DRAIN_SECONDS = 300
CANCELLED = "notifications/cancelled"


class AnswerAll:
    """Relays messages both ways, counting requests in and answers out by id."""

    def __init__(self, stdin: Any, stdout: Any) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self.server_in, self._to_server = _pipe()
        self._from_server, self.server_out = _pipe()
        self._pending: Counter[Any] = Counter()
        self._drained = anyio.Event()
        self._input_ended = False

    def unanswered(self) -> int:
        """Requests read but never answered."""
        return sum(self._pending.values())

    async def pump_in(self) -> None:
        """stdin -> server; at end of input, hold the server's input open until drained."""
        async with self._to_server:
            try:
                async for item in self._stdin:
                    if isinstance(item, Exception):  # a line the transport could not read
                        await self._reject(item)
                        continue
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, JSONRPCRequest):
                        self._pending[message.id] += 1
                    elif isinstance(message, JSONRPCNotification) and message.method == CANCELLED:
                        # A cancelled request gets no answer (MCP spec): stop waiting for it.
                        self._answered((message.params or {}).get("requestId"))
                    await self._to_server.send(item)
            except anyio.BrokenResourceError:
                return  # the server stopped reading; nothing more can be answered
            self._input_ended = True
            self._check_drained()
            with anyio.move_on_after(DRAIN_SECONDS):
                await self._drained.wait()
            if self.unanswered():
                log.error("%d request(s) still unanswered at end of input", self.unanswered())

    async def pump_out(self) -> None:
        """server -> stdout, crossing off each request as its answer is written."""
        async with self._stdout:
            async for item in self._from_server:
                await self._stdout.send(item)
                message = item.message if isinstance(item, SessionMessage) else None
                if isinstance(message, JSONRPCResponse | JSONRPCError):
                    self._answered(message.id)

    async def _reject(self, problem: Exception) -> None:
        """Answer an unreadable line with JSON-RPC's error for it (id null: none was read)."""
        if _not_json(problem):
            error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not JSON")
        else:
            error = ErrorData(
                code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message"
            )
        log.warning("stdin: %s", error.message)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._stdout.send(
                SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))
            )

    def _answered(self, request_id: Any) -> None:
        if self._pending[request_id] > 1:
            self._pending[request_id] -= 1
        else:
            self._pending.pop(request_id, None)
        self._check_drained()

    def _check_drained(self) -> None:
        if self._input_ended and not self._pending:
            self._drained.set()


def _not_json(problem: Exception) -> bool:
    """Whether the transport failed on the JSON itself (else on the message's shape)."""
    if isinstance(problem, ValidationError):
        return any(error["type"] == "json_invalid" for error in problem.errors())
    return isinstance(problem, ValueError | UnicodeDecodeError)


def _pipe() -> tuple[Any, Any]:
    """A rendezvous channel (receive end, send end): back-pressure reaches stdin as before."""
    send, receive = anyio.create_memory_object_stream[Any](0)
    return receive, send
