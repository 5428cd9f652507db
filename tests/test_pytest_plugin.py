"""The pytest plugin, run with pytester on a sample test file: with --dk-mirror-locked the
documents come from the lock and any network attempt fails; without it, nothing changes."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from mirror import config
from mirror import pytest_plugin as plugin
from tests.emulator import Emulator
from tests.pinned_repo import A11Y, INTRO, LOCKED, NOT_LOCKED, PinnedRepo, make_pinned_repo

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def load_plugin(pytestconfig: pytest.Config) -> list[str]:
    """Arguments that load the plugin in an inner session: none when dk-mirror is installed
    with its entry point (it then loads in every session, this one too, and `-p` would load
    it a second time under another name, which pytest refuses)."""
    installed = pytestconfig.pluginmanager.get_plugin("dk-mirror") is plugin
    # An inner session in an xdist worker sees the worker's environment: a pytest-benchmark
    # installed system-wide then warns that xdist is active, and warnings are errors here.
    quiet = ["-p", "no:benchmark"]
    return quiet if installed else [*quiet, "-p", plugin.__name__]


# A user's test file: it feeds pinned docs to code, and one test tries to go online.
SAMPLE = f'''
import hashlib, os, subprocess, sys

from mirror.config import Settings
from mirror.service import Mirror


def test_docs_by_name(dk_mirror_docs):
    doc = dk_mirror_docs["https://{A11Y.removeprefix("documents/")}"]
    assert doc.name == "{A11Y}" and doc.content
    print("A11Y-SHA", hashlib.sha256(doc.content.encode()).hexdigest())
    assert sorted(dk_mirror_docs) == {LOCKED!r}
    assert "{NOT_LOCKED}" not in dk_mirror_docs


def test_environment_is_strictly_offline():
    print("ENV", os.environ.get("DK_MIRROR_STRICT_OFFLINE"), os.environ.get("DK_MIRROR_DB"))


def test_a_subprocess_reads_the_locked_store():
    out = subprocess.run([sys.executable, "-m", "mirror", "get", "{INTRO}"],
                         capture_output=True, text=True)
    print("SUBPROCESS", out.returncode, len(out.stdout))


def test_goes_online():
    with Mirror(Settings.resolve()) as mirror:  # closed: runs in-process, sockets and all
        mirror.fetch(["{NOT_LOCKED}"])
'''


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> PinnedRepo:
    return make_pinned_repo(tmp_path_factory.mktemp("pinned") / "project")


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A live upstream holding the sample's unlocked document, as the session's default."""
    doc = {"name": NOT_LOCKED, "content": "# Caching\\n", "uri": "https://x"}
    with Emulator([doc], api_key="test-key") as running:
        monkeypatch.setenv("DK_MIRROR_UPSTREAM", running.base_url)
        monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", "test-key")
        monkeypatch.setenv("DK_MIRROR_DB", "unused-by-a-locked-session.sqlite3")
        monkeypatch.delenv("DK_MIRROR_STRICT_OFFLINE", raising=False)
        yield running


@pytest.fixture
def project(pytester: pytest.Pytester, pinned: PinnedRepo) -> pytest.Pytester:
    pytester.makepyfile(test_docs=SAMPLE)
    for f in (pinned.lock, pinned.snapshot):
        (pytester.path / f.name).write_bytes(f.read_bytes())
    return pytester


def _lines(result: pytest.RunResult, tag: str) -> list[str]:
    # With -s, a print lands after the progress dots: `.ENV 1 ...`.
    return [ln[ln.index(tag) :] for ln in result.outlines if f"{tag} " in ln]


def test_with_the_option_docs_come_from_the_lock_and_the_network_fails(
    project: pytest.Pytester, pinned: PinnedRepo, upstream: Emulator, load_plugin: list[str]
) -> None:
    result = project.runpytest(*load_plugin, "--dk-mirror-locked", "-s")
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["dk-mirror: 4 locked documents from *docs.snap, strict offline"])
    result.stdout.fnmatch_lines(["*NetworkForbidden: strict offline mode: refusing to contact*"])
    assert upstream.count() == 0  # nothing reached the network
    from mirror.snapshots.lockfile import read_lock_file

    locked = {e.name: e.sha256 for e in read_lock_file(pinned.lock)}
    (sha,) = _lines(result, "A11Y-SHA")
    assert "sha256:" + sha.split()[1] == locked[A11Y]
    (env,) = _lines(result, "ENV")
    assert env.split()[1] == "1" and env.split()[2].endswith("docs.sqlite3")
    assert not Path(env.split()[2]).exists()  # the temporary store is gone after the session
    (sub,) = _lines(result, "SUBPROCESS")
    assert sub.split()[1] == "0" and int(sub.split()[2]) > 500
    # The session's environment changes are undone.
    assert os.environ["DK_MIRROR_DB"] == "unused-by-a-locked-session.sqlite3"
    assert "DK_MIRROR_STRICT_OFFLINE" not in os.environ


def test_without_the_option_nothing_changes(
    project: pytest.Pytester, upstream: Emulator, load_plugin: list[str]
) -> None:
    result = project.runpytest(*load_plugin, "-s", "-rs")
    # The fixture's test is skipped, naming the option; the others run as they would anyway:
    # the environment is the user's and the online test reaches upstream.
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(["*the locked dk-mirror docs need --dk-mirror-locked*"])
    (env,) = _lines(result, "ENV")
    assert env == "ENV None unused-by-a-locked-session.sqlite3"
    assert upstream.count() > 0
    assert "dk-mirror:" not in result.stdout.str()


def test_a_snapshot_that_does_not_match_the_lock_stops_the_session(
    project: pytest.Pytester, load_plugin: list[str]
) -> None:
    lock = project.path / "dk-mirror.lock"
    text = lock.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith(A11Y + " "))
    lock.write_text(text.replace(line, f"{A11Y} sha256:{'0' * 64} -"))
    result = project.runpytest(*load_plugin, "--dk-mirror-locked")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{A11Y}*"])
    missing = project.runpytest(*load_plugin, "--dk-mirror-locked",
                                "--dk-mirror-snapshot", "other.snap")  # fmt: skip
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*no snapshot at *other.snap*"])


@pytest.mark.slow
def test_loading_the_plugin_imports_nothing_of_dk_mirror(
    pytester: pytest.Pytester, load_plugin: list[str]
) -> None:
    pytester.makepyfile(
        test_imports="""
        import sys

        def test_nothing_heavy():
            loaded = sorted(m for m in sys.modules if m.startswith("mirror") or m in
                            ("sqlalchemy", "httpx", "alembic", "mcp"))
            assert loaded == ["mirror", "mirror.pytest_plugin"], loaded
        """
    )
    result = pytester.runpytest_subprocess(*load_plugin)
    result.assert_outcomes(passed=1)


def test_the_entry_point_and_the_env_names_agree_with_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"dk-mirror": "mirror.pytest_plugin"}
    assert (plugin.ENV_DB, plugin.ENV_STRICT_OFFLINE) == (config.ENV_DB, config.ENV_STRICT_OFFLINE)
