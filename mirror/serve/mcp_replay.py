"""The MCP SDK's own answers to get_documents, replayed while the store is unchanged.

The SDK spends several milliseconds on every tools/call whatever the answer: a transport and a
server task per stateless request, validating the result into pydantic models, and
`model_dump_json` of ~230 kB of documents twice (text and structuredContent). Under 64
clients that made /mcp's p99 15-23x the bare endpoint's (bench/bench_serve.py), while REST,
which answers the same documents from memory, stayed within 2x.

So a read-only server keeps, for each get_documents request it has seen, the exact response
the SDK sent (status, headers, body) and answers the same request again with those bytes,
only the JSON-RPC id spliced in. What a hit has to match, so that the SDK would have answered
it byte for byte the same:

- the request: one JSON-RPC request (not a notification or a batch), an int or string id,
  `tools/call` of get_documents with nothing but `{"names": [strings]}`; anything else (other
  tools, `_meta`, extra arguments, duplicate keys, a body JSON parsers could read differently)
  goes to the SDK;
- every request header the SDK reads (Host, Origin, Accept, Content-Type, the protocol
  version, a session id, anything unknown), and the query string: only those that cannot
  change the answer are left out of the key (`IGNORED_HEADERS`);
- the store generation (AnswerCache.generation): an answer is kept under the generation read
  before the SDK ran and dropped when the store changes, as the documents cache does.

Only a 200 with a JSON-RPC result that is not a tool error is kept, so refusals (Host,
Origin, Accept, protocol version) and errors always come from the SDK. The token check and
the body limit are middleware in front of this, for both paths alike.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson
import pydantic_core
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .answer_cache import AnswerCache

# Headers that cannot change the SDK's answer: framing, the client's name, compression it
# accepts (the SDK never compresses), and the credentials RequestGuard has checked already.
IGNORED_HEADERS = frozenset(
    {
        b"content-length",
        b"connection",
        b"keep-alive",
        b"user-agent",
        b"accept-encoding",
        b"authorization",
        b"x-goog-api-key",
    }
)
# Bytes of kept answers at most (one 20-document answer is ~230 kB).
DEFAULT_MAX_BYTES = 64 << 20
# JSON-RPC ids kept to what every JSON parser reads the same way.
_ID_RANGE = range(-(2**53), 2**53)
_PREFIX = b'{"jsonrpc":"2.0","id":'

Key = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    """One SDK response: status, headers without Content-Length, the body after the id."""

    status: int
    headers: list[tuple[bytes, bytes]]
    tail: bytes  # `"result":{...}}`

    def body(self, request_id: int | str) -> bytes:
        """The response body for a request with `request_id`."""
        return _PREFIX + pydantic_core.to_json(request_id) + b"," + self.tail


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Parsers disagree on which of two equal keys wins: such a body is left to the SDK.
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate
    return out


def request_key(scope: Scope, body: bytes) -> tuple[Key, int | str] | None:
    """(cache key, JSON-RPC id) of a get_documents call the replay may answer; else None."""
    try:
        # Strict UTF-8 and no byte-order mark: what the SDK's parser accepts, no more.
        message = json.loads(body.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id = message["id"]
    if isinstance(request_id, bool) or not (
        _encodable(request_id) or (isinstance(request_id, int) and request_id in _ID_RANGE)
    ):
        return None
    params = message["params"]
    if (
        message["jsonrpc"] != "2.0"
        or message["method"] != "tools/call"
        or not isinstance(params, dict)
        or params.keys() != {"name", "arguments"}
        or params["name"] != "get_documents"
        or not isinstance(params["arguments"], dict)
        or params["arguments"].keys() != {"names"}
    ):
        return None
    names = params["arguments"]["names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    headers = tuple(
        sorted((k.lower(), v) for k, v in scope["headers"] if k.lower() not in IGNORED_HEADERS)
    )
    return (tuple(names), headers, scope.get("query_string", b"")), request_id


def _encodable(value: object) -> bool:
    """A string that UTF-8 can carry (JSON's \\ud800 escapes can make one it cannot)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def answer_of(
    status: int, headers: list[tuple[bytes, bytes]], body: bytes, request_id: int | str
) -> Answer | None:
    """The SDK's response as an Answer to replay, or None if it must not be replayed."""
    start = _PREFIX + pydantic_core.to_json(request_id) + b","
    content_type = dict(headers).get(b"content-type", b"")
    if status != 200 or not content_type.startswith(b"application/json"):
        return None
    if not body.startswith(start):
        return None
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "result"}:
        return None
    result = message["result"]
    if not isinstance(result, dict):
        return None
    if result.get("isError"):
        return None  # errors are rare and cheap to answer: the SDK says them every time
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    return Answer(status, kept, body[len(start) :])


class AnswerStore:
    """Answers by request key, valid for one store generation, least recently used go first."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._answers: OrderedDict[Key, Answer] = OrderedDict()
        self._generation: int | None = None
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Key, generation: int | None) -> Answer | None:
        """The answer kept for `key` at `generation`, if any."""
        with self._lock:
            if generation is None or generation != self._generation:
                return None
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def keep(self, key: Key, answer: Answer, generation: int | None, current: int | None) -> None:
        """Keep `answer`, computed from the store at `generation`, if that is still `current`."""
        if generation is None or generation != current:
            return  # the store changed while the SDK answered: the answer may be older
        with self._lock:
            if generation != self._generation:
                self._answers.clear()
                self._bytes = 0
                self._generation = generation
            old = self._answers.pop(key, None)
            if old is not None:
                self._bytes -= len(old.tail)
            self._answers[key] = answer
            self._bytes += len(answer.tail)
            while self._bytes > self.max_bytes and self._answers:
                _key, oldest = self._answers.popitem(last=False)
                self._bytes -= len(oldest.tail)


class McpReplay:
    """ASGI app in front of the SDK's /mcp endpoint: replays kept get_documents answers."""

    def __init__(
        self, sdk: ASGIApp, cache: AnswerCache, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self.sdk = sdk
        self.cache = cache
        self.answers = AnswerStore(max_bytes)
        self.hits = 0  # answers replayed (for tests and a curious operator)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a kept request here; pass every other one to the SDK, keeping its answer."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.sdk(scope, receive, send)
            return
        body, replay = await _read_body(receive)
        found = None if body is None else request_key(scope, body)
        if found is None:
            await self.sdk(scope, replay, send)
            return
        key, request_id = found
        generation = self.cache.generation()
        answer = self.answers.get(key, generation)
        if answer is not None:
            self.hits += 1
            await _send(send, answer, request_id)
            return
        status, headers, sent = await _recorded(self.sdk, scope, replay, send)
        kept = answer_of(status, headers, sent, request_id)
        if kept is not None:
            self.answers.keep(key, kept, generation, self.cache.generation())


async def _read_body(receive: Receive) -> tuple[bytes | None, Receive]:
    """The whole request body (None if the client went away), and a receive replaying it.

    BodyLimit, in front, has already bounded how much there can be.
    """
    messages: list[Message] = []
    chunks: list[bytes] = []
    complete = False
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            complete = True
            break

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return (b"".join(chunks) if complete else None), replay


async def _recorded(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run `app`, passing its response on as it goes; its status, headers and whole body."""
    status = 0
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def recording(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
        await send(message)

    await app(scope, receive, recording)
    return status, headers, b"".join(chunks)


async def _send(send: Send, answer: Answer, request_id: int | str) -> None:
    body = answer.body(request_id)
    headers = [*answer.headers, (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
