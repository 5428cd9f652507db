"""Self-consistent but hostile snapshots: bad names, huge lines, bombs and blank floods."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.snapshots import format as snapshot
from mirror.snapshots.read import MAX_PROBLEMS, verify
from tests.conftest import document_count

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

GOOD = "documents/example.com/good"
# Every one passes the file's own hashes; each is refused by `get` and `import`.
HOSTILE = [
    "documents/example.com/a/../../etc/passwd",  # a '..' segment
    "documents/example.com/nul\x00byte",  # NUL
    "documents//etc/passwd",  # an absolute path where the host should be
    "documents/example.com/\x1b]0;owned\x07\x1b[2J",  # terminal escapes
    "documents/Example.COM/upper",  # valid, but not canonical
]


def doc(name: str, content: str = "# hello\n") -> Document:
    return Document(name=name, content=content, title="t")


def write(path: Path, names: list[str], **contents: str) -> Path:
    docs = sorted((doc(n, contents.get(n.rsplit("/", 1)[-1], "# hello\n")) for n in names),
                  key=lambda d: d.name)  # fmt: skip
    snapshot.write_full(path, docs, {})
    return path


@pytest.fixture
def run(cli_offline):  # type: ignore[no-untyped-def]
    """The CLI offline against the test's store (tests/conftest.py)."""
    return cli_offline


stored = document_count


def test_verify_and_import_refuse_every_hostile_name_and_name_each(
    run, db_url: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "hostile.jsonl.gz", [GOOD, *HOSTILE])
    report = verify(path)
    assert not report.ok
    assert set(report.bad_names) == set(HOSTILE)
    for name in HOSTILE:
        assert any(repr(name)[1:-1] in p for p in report.problems), name
    result = run("snapshot", "verify", str(path))
    assert result.exit_code == 1
    assert (
        "\x1b" not in result.output and "\x00" not in result.output and "\x07" not in result.output
    )
    assert "\\x1b]0;owned" in result.stderr
    imported = run("snapshot", "import", str(path))
    assert imported.exit_code == 2 and "failed verification" in imported.stderr
    assert "\x1b" not in imported.output
    assert stored(db_url) == 0


def test_a_tombstone_with_a_hostile_name_is_refused(tmp_path: Path) -> None:
    base = {GOOD: snapshot.document_hashes(doc(GOOD)), HOSTILE[0]: ("sha256:" + "0" * 64,) * 2}
    path = tmp_path / "delta.jsonl.gz"
    snapshot.write_delta(path, base, [doc(GOOD)], {})
    report = verify(path)
    assert not report.ok and report.bad_names == (HOSTILE[0],)


def test_a_clean_snapshot_still_imports(run, db_url: str, tmp_path: Path) -> None:
    path = write(tmp_path / "ok.jsonl.gz", [GOOD, "documents/example.com/é/ünïcode"])
    assert verify(path).ok
    assert run("snapshot", "import", str(path)).exit_code == 0
    assert stored(db_url) == 2


def test_a_document_over_the_limit_is_named_and_the_manifest_may_be_larger(
    run, db_url: str, tmp_path: Path
) -> None:
    names = [f"documents/example.com/p{i:03}" for i in range(60)]  # manifest: about 12 KB
    path = write(tmp_path / "s.jsonl.gz", names, p007="x" * 4000)
    report = verify(path, max_document_bytes=2048)
    assert report.bad_names == ("documents/example.com/p007",)
    assert any("line 8: document 'documents/example.com/p007' is" in p for p in report.problems)
    assert verify(path).ok
    refused = run("snapshot", "import", str(path), "--max-document-bytes", "2048")
    assert refused.exit_code == 2 and "p007" in refused.stderr
    checked = run("snapshot", "verify", str(path), "--max-document-bytes", "2048")
    assert checked.exit_code == 1 and "over the limit of 2048 bytes" in checked.stderr
    assert stored(db_url) == 0
    assert run("snapshot", "import", str(path)).exit_code == 0
    assert stored(db_url) == 60


def test_a_gzip_bomb_stops_the_scan_without_inflating_it(tmp_path: Path) -> None:
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    path = tmp_path / "bomb.jsonl.gz"
    with path.open("wb") as out:
        out.write(packer.compress(b'{"document":{"content":"'))
        for _ in range(80):  # 80 MiB without a newline
            out.write(packer.compress(b"z" * (1 << 20)))
        out.write(packer.flush())
    report = verify(path, max_document_bytes=4096)
    assert not report.ok
    assert "reading stopped there" in report.problems[0]
    assert report.problems[-1] == "no manifest: file truncated?"


def test_blank_lines_are_one_problem_and_problems_are_capped(tmp_path: Path) -> None:
    good = write(tmp_path / "ok.jsonl.gz", [GOOD])
    lines = gzip.decompress(good.read_bytes()).split(b"\n")
    flooded = tmp_path / "blank.jsonl.gz"
    flooded.write_bytes(gzip.compress(lines[0] + b"\n" * 1_000_001 + b"\n".join(lines[1:])))
    report = verify(flooded)
    assert report.problems == ("1000000 blank line(s), the first at line 2",)
    junk = tmp_path / "junk.jsonl.gz"
    junk.write_bytes(gzip.compress(b"x\n" * 5000 + b"\n".join(lines)))
    problems = verify(junk).problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == f"... and {5000 - MAX_PROBLEMS} more problem(s) not listed"
    assert json.loads(lines[-2])["manifest"]["count"] == 1
