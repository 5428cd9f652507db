"""The environment a test gives a `dk-mirror` process: a user's shell, not the suite's."""

from __future__ import annotations

import os

from mirror.config import ENV_MODEL_CACHE

# dk-mirror's settings and the API key's variable: a test sets the ones it means.
SETTINGS = ("DK_MIRROR", "DEVELOPER_")


def user_env(**extra: str) -> dict[str, str]:
    """This environment without dk-mirror's settings or an API key, with `extra` set. The test
    worker's prepared model folder (tests/conftest.py) stays: it is the machine's, like a CI
    cache volume, and without it every process that embeds or searches prepared the graph
    again (about 3 s of CPU each)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS)}
    machine = {k: os.environ[k] for k in (ENV_MODEL_CACHE,) if k in os.environ}
    return {**keep, **machine, **extra}
