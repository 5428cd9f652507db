"""A pytest plugin (entry point `pytest11`): a test session on the pinned docs, strictly offline.

Off unless asked for. `pytest --dk-mirror-locked` syncs the lock (`--dk-mirror-lock`) from the
snapshot (`--dk-mirror-snapshot`) into a temporary store before the session, with the same
`sync --locked` the CLI runs, then sets DK_MIRROR_DB to that store and DK_MIRROR_STRICT_OFFLINE=1
for the session (subprocesses included), so any attempt to reach the network is an error. The
`dk_mirror_docs` fixture maps locked names to their Documents. Every dk-mirror import waits
until the option is given: pytest loads this module in every session of every project that
has dk-mirror installed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .models import Document
    from .service import Mirror

OPTION = "--dk-mirror-locked"
_KEY = "dk-mirror-locked"
# Set for the session, restored after (the names are mirror.config's, kept literal so that
# loading this module imports nothing of dk-mirror; a test checks they agree).
ENV_DB = "DK_MIRROR_DB"
ENV_STRICT_OFFLINE = "DK_MIRROR_STRICT_OFFLINE"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The options (and ini keys) of the plugin."""
    group = parser.getgroup("dk-mirror", "dk-mirror pinned docs")
    group.addoption(OPTION, action="store_true", default=False,
                    help="Sync the locked docs from the snapshot before the session and run it "
                    "strictly offline (DK_MIRROR_STRICT_OFFLINE=1, a temporary DK_MIRROR_DB).")  # fmt: skip
    group.addoption("--dk-mirror-lock", metavar="PATH", default=None,
                    help="The lock file (ini dk_mirror_lock; default dk-mirror.lock).")  # fmt: skip
    group.addoption("--dk-mirror-snapshot", metavar="PATH", default=None,
                    help="The snapshot with the locked bytes (ini dk_mirror_snapshot; "
                    "default docs.snap).")  # fmt: skip
    parser.addini("dk_mirror_lock", "dk-mirror lock file", default="dk-mirror.lock")
    parser.addini("dk_mirror_snapshot", "dk-mirror snapshot file", default="docs.snap")


def _path(config: pytest.Config, option: str, ini: str) -> Path:
    given = config.getoption(option)
    value = str(given) if given else str(config.getini(ini))
    # Relative paths are the project's: the rootdir, not wherever pytest was started.
    return Path(value) if Path(value).is_absolute() else config.rootpath / value


def pytest_configure(config: pytest.Config) -> None:
    """With the option: sync, then switch the session to the synced store, strictly offline."""
    if not config.getoption(OPTION):
        return
    session = LockedSession(
        _path(config, "--dk-mirror-lock", "dk_mirror_lock"),
        _path(config, "--dk-mirror-snapshot", "dk_mirror_snapshot"),
    )
    session.start()
    config.pluginmanager.register(session, _KEY)


class LockedSession:
    """The synced temporary store, the environment it changed, and the Mirror over it."""

    def __init__(self, lock: Path, snapshot: Path) -> None:
        self.lock, self.snapshot = lock, snapshot
        self.directory: Path | None = None
        self.saved: dict[str, str | None] = {}
        self.mirror: Mirror | None = None
        self.names: frozenset[str] = frozenset()

    def start(self) -> None:
        """Sync the lock from the snapshot into a new store; UsageError if it cannot be exact."""
        from .config import Settings
        from .errors import MirrorError
        from .service import Mirror
        from .snapshots.lockfile import read_lock_file

        for path, what in ((self.lock, "lock file"), (self.snapshot, "snapshot")):
            if not path.is_file():
                raise pytest.UsageError(
                    f"{OPTION}: no {what} at {path} (make it with `dk-mirror lock` and "
                    "`dk-mirror snapshot export SNAPSHOT --lock LOCK`, or point "
                    "--dk-mirror-lock / --dk-mirror-snapshot at it)"
                )
        self.directory = Path(tempfile.mkdtemp(prefix="dk-mirror-locked-"))
        db = self.directory / "docs.sqlite3"
        self.saved = {k: os.environ.get(k) for k in (ENV_DB, ENV_STRICT_OFFLINE)}
        os.environ.update({ENV_DB: str(db), ENV_STRICT_OFFLINE: "1"})
        try:
            self.mirror = Mirror(Settings.resolve())
            report = self.mirror.sync_locked(self.lock, source=self.snapshot)
            self.names = frozenset(e.name for e in read_lock_file(self.lock))
        except MirrorError as exc:
            self.stop()
            raise pytest.UsageError(f"{OPTION}: {exc}") from None
        if report.mismatches:
            self.stop()
            raise pytest.UsageError(
                f"{OPTION}: {len(report.mismatches)} of {report.locked} locked documents are "
                f"not in {self.snapshot} as locked:\n  "
                + "\n  ".join(str(m) for m in report.mismatches)
            )

    def stop(self) -> None:
        """Close the store, restore the environment, remove the temporary store."""
        if self.mirror is not None:
            self.mirror.close()
            self.mirror = None
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.saved = {}
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def pytest_report_header(self) -> str:
        """Say, at the top of the run, where the documents come from."""
        return f"dk-mirror: {len(self.names)} locked documents from {self.snapshot}, strict offline"

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """End of the session: undo what start() did."""
        self.stop()
        config.pluginmanager.unregister(self, _KEY)


class LockedDocs(Mapping[str, "Document"]):
    """Locked name (any accepted form) -> its Document, read from the synced store."""

    def __init__(self, session: LockedSession) -> None:
        self._session = session

    def _canonical(self, name: str) -> str:
        from .names import normalize

        return normalize(name)  # InvalidInput (a test error) for what cannot be a name

    def __getitem__(self, name: str) -> Document:
        canonical = self._canonical(name)
        if canonical not in self._session.names:
            raise KeyError(
                f"{canonical} is not in {self._session.lock}: add it to dk-mirror.toml, run "
                "`dk-mirror lock` and export the snapshot again"
            )
        assert self._session.mirror is not None
        (doc,) = self._session.mirror.get_documents([canonical]).documents
        return doc

    def __contains__(self, name: object) -> bool:
        from .errors import MirrorError

        try:
            return isinstance(name, str) and self._canonical(name) in self._session.names
        except MirrorError:
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._session.names))

    def __len__(self) -> int:
        return len(self._session.names)


@pytest.fixture(scope="session")
def dk_mirror_docs(pytestconfig: pytest.Config) -> LockedDocs:
    """The locked documents by name (needs --dk-mirror-locked; skipped without it)."""
    session = pytestconfig.pluginmanager.get_plugin(_KEY)
    if not isinstance(session, LockedSession):
        pytest.skip(f"the locked dk-mirror docs need {OPTION}")
    return LockedDocs(session)
