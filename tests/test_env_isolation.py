"""Every test runs with none of the caller's dk-mirror settings (tests/conftest.py)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mirror import config

ROOT = Path(__file__).resolve().parents[1]


def test_no_setting_of_the_caller_reaches_a_test(tmp_path: Path) -> None:
    leaked = {name: os.environ[name] for name in config.ENV_VARS if name in os.environ}
    # The variables conftest sets: a home inside this test's own folder, semantic search off
    # (the tests that need it turn it on), and the test worker's one prepared model.
    assert leaked == {
        config.ENV_HOME: str(tmp_path / "home"),
        config.ENV_SEMANTIC: "off",
        config.ENV_MODEL_CACHE: str(tmp_path.parent / "models"),
    }


@pytest.mark.slow
def test_python3_by_name_is_the_interpreter_under_test() -> None:
    """A test that runs `python3` (or `dk-mirror`) by name gets the installation under test,
    also when another Python with another dk-mirror comes first on the caller's PATH."""
    found = subprocess.run(["python3", "-c", "import sys; print(sys.prefix)"],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert found.returncode == 0 and found.stdout.strip() == sys.prefix, found.stderr


@pytest.mark.slow
def test_settings_exported_by_the_caller_are_cleared(tmp_path: Path) -> None:
    # Run the test above in a pytest whose own environment sets every variable.
    env = dict(os.environ)
    env.update(dict.fromkeys(config.ENV_VARS, "1"))
    here = f"{Path(__file__).relative_to(ROOT)}::test_no_setting_of_the_caller_reaches_a_test"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", here],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_env_vars_lists_every_variable_named_in_the_code() -> None:
    # Any string constant in mirror/ that looks like one of our variables must be listed.
    named: set[str] = set()
    for path in (ROOT / "mirror").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if value.startswith("DK_MIRROR_") and value.replace("_", "").isalnum():
                    named.add(value)
    assert named <= set(config.ENV_VARS)
    assert config.ENV_API_KEY in config.ENV_VARS
