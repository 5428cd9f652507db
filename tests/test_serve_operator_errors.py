"""A served failure of the mirror's own upstream or setup tells the caller what happened, not
where the upstream is or which of the operator's settings to change (they go to its log)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import httpx

from mirror.config import ENV_VARS, Settings
from mirror.service import Mirror
from tests.serve_process import clean_env, serve

GUIDE = "documents/www.tensorflow.org/guide/data"
SETTING = re.compile("|".join(ENV_VARS))


def _bodies(url: str, name: str) -> list[str]:
    """What a caller gets for `name` from REST, MCP and the browser."""
    from mcp import Client

    rest = httpx.get(f"{url}/v1/{name}", timeout=60)
    assert rest.status_code == 502, rest.text
    page = httpx.get(f"{url}/doc/{name.removeprefix('documents/')}", timeout=60)
    assert page.status_code == 502

    async def call() -> Any:
        async with Client(url + "/mcp") as client:
            return await client.call_tool("get_documents", {"names": [name]})

    tool = anyio.run(call)
    assert tool.is_error and tool.content[0].text.startswith("UNAVAILABLE (502)")
    return [rest.json()["error"]["message"], page.text, tool.content[0].text]


def test_a_served_502_names_neither_the_upstream_nor_a_setting(emulator, tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)).close()  # made, migrated
    env = clean_env(
        tmp_path / "home",
        DK_MIRROR_UPSTREAM=emulator.base_url,
        DEVELOPER_KNOWLEDGE_API_KEY=emulator.api_key,
    )
    host = emulator.base_url.split("//", 1)[1]
    with serve(db, "--allow-fetch", env=env) as served:
        emulator.api_key = "rotated"  # upstream rejects the mirror's key: AuthError
        refused = _bodies(served.url, GUIDE)
        emulator.api_disabled = True  # and the API is off for its project: PermissionDenied
        disabled = _bodies(served.url, "documents/www.tensorflow.org/hub/installation")
        log = served.log
    for body in refused + disabled:
        assert "upstream failed" in body, body
        assert host not in body and not SETTING.search(body), body
    assert all("API key not valid" in body for body in refused)
    # The operator still has every detail: where, and which setting.
    assert host in log and "DEVELOPER_KNOWLEDGE_API_KEY" in log
