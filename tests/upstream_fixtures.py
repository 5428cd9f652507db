"""Upstream clients against the emulator, for the client tests (REST and MCP)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirror.config import Settings
from mirror.upstream import Upstream, open_upstream
from tests.conftest import no_wait_retry
from tests.emulator import Emulator


def open_client(
    emulator: Emulator, transport: str, key: str = "test-key", **settings: int
) -> Upstream:
    """A client for the emulator over `transport`, with waits patched to zero."""
    config = Settings(
        db_url="sqlite://",
        upstream=emulator.base_url,
        transport=transport,
        api_key=key,
        **settings,  # type: ignore[arg-type]
    )
    return open_upstream(config, retry=no_wait_retry())


@pytest.fixture
def rest(emulator: Emulator) -> Iterator[Upstream]:
    """A REST client for the emulator."""
    upstream = open_client(emulator, "rest")
    yield upstream
    upstream.close()


@pytest.fixture
def mcp(emulator: Emulator) -> Iterator[Upstream]:
    """An MCP client for the emulator."""
    upstream = open_client(emulator, "mcp")
    yield upstream
    upstream.close()
