"""A scratch project with pinned docs, made the way a user makes one: `dk-mirror import --sample`,
a `dk-mirror.toml` naming some sample documents, `dk-mirror lock --offline`, then
`dk-mirror snapshot export --lock`. The CI-integration tests start from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from mirror.cli.main import cli

A11Y = "documents/developer.chrome.com/docs/extensions/mv3/a11y"
INTRO = "documents/developer.chrome.com/docs/extensions/mv3/intro"
PREFIX = "documents/www.tensorflow.org/hub/common_signatures/"
UNDER_PREFIX = (f"{PREFIX}images", f"{PREFIX}text")
# In the sample, not required: a test asking for it must not get it from the lock.
NOT_LOCKED = "documents/www.tensorflow.org/hub/caching"
REQUIREMENTS = """[docs]
names = ["developer.chrome.com/docs/extensions/mv3/a11y", "https://developer.chrome.com/docs/extensions/mv3/intro"]
prefixes = ["www.tensorflow.org/hub/common_signatures/"]
"""
LOCKED = sorted([A11Y, INTRO, *UNDER_PREFIX])


@dataclass(frozen=True)
class PinnedRepo:
    """Where the pieces are: the project root, its toml, lock and snapshot, the authoring store."""

    root: Path
    toml: Path
    lock: Path
    snapshot: Path
    store: Path


def dk_mirror(*args: str, db: Path) -> str:
    """Run a `dk-mirror` command in-process on store `db` (offline, no user settings); stdout."""
    env = {
        "DK_MIRROR_DB": str(db),
        "DK_MIRROR_HOME": str(db.parent / "home"),
        "DK_MIRROR_UPSTREAM": None,
        "DK_MIRROR_STRICT_OFFLINE": None,
        "DEVELOPER_KNOWLEDGE_API_KEY": None,
    }
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.stdout


def make_pinned_repo(root: Path) -> PinnedRepo:
    """Author a project's dk-mirror.toml, dk-mirror.lock and docs.snap under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    repo = PinnedRepo(
        root, root / "dk-mirror.toml", root / "dk-mirror.lock", root / "docs.snap",
        root.parent / f"{root.name}-author.sqlite3",
    )  # fmt: skip
    repo.toml.write_text(REQUIREMENTS, encoding="utf-8")
    dk_mirror("import", "--sample", db=repo.store)
    dk_mirror("lock", "--offline", "--requirements", str(repo.toml), "--output", str(repo.lock),
              db=repo.store)  # fmt: skip
    dk_mirror("snapshot", "export", str(repo.snapshot), "--lock", str(repo.lock), db=repo.store)
    return repo
