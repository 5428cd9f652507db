"""Marks for the tests of the embedding model itself."""

from __future__ import annotations

import pytest

from mirror.semantic import model

# The model's packages are installed: the semantic tier can run here.
needs_model = pytest.mark.skipif(
    not model.status().available,
    reason="the semantic extra is not installed (pip install -e '.[semantic]')",
)
# For the tests of the prepared model's cache: each test gets a new one in its own home
# (conftest's `home_model_cache`), not the test worker's shared one.
OWN_MODEL_CACHE = [pytest.mark.usefixtures("home_model_cache"), needs_model]
