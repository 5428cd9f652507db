"""`dk-mirror export`'s shared machinery, through the md format on the packaged sample store:
selection (--prefix, --lock), deterministic bytes, incremental writes, removal of pages no
longer selected (and of nothing else), the notice, the summary, and its errors."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.exports.writer import MANIFEST
from mirror.service import Mirror
from mirror.snapshots import lockfile, mdpaths
from mirror.store.store import Store


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _change(url: str, name: str, content: str) -> None:
    store = Store.open(url)
    try:
        doc = store.get_many([name])[name].document
        store.put([replace(doc, content=content)], fetched_at=2e9, upstream="test")
    finally:
        store.close()


def test_two_exports_are_identical_and_a_second_rewrites_nothing(
    sample: Mirror, tmp_path: Path
) -> None:
    first = sample.export("md", tmp_path / "a")
    assert (first.pages, first.files, first.written, first.unchanged) == (50, 52, 52, 0)
    again = sample.export("md", tmp_path / "a")
    assert (again.written, again.unchanged, again.removed) == (0, 52, 0)
    sample.export("md", tmp_path / "b")
    one, two = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert one == two and len(one) == 53  # 50 pages, index.md, NOTICE.md, the manifest
    notice = " ".join(one["NOTICE.md"].decode().split())
    assert "Creative Commons Attribution 4.0" in notice and "Apache 2.0" in notice
    assert json.loads(one[MANIFEST.as_posix()])["files"] == sorted(set(one) - {MANIFEST.name})


def test_a_changed_page_rewrites_only_itself(
    sample: Mirror, sample_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "md"
    sample.export("md", out)
    name = sorted(n.name for n in sample.list_documents(None, 100))[7]
    page = out / mdpaths.relative_path(name)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.md")}
    _change(sample_url, name, "# Changed\n\nNew words.\n")
    report = sample.export("md", out)
    assert (report.written, report.unchanged, report.removed) == (1, 51, 0)
    assert page.read_text().endswith("# Changed\n\nNew words.\n")
    touched = [p for p in out.rglob("*.md") if p.stat().st_mtime_ns != before[p]]
    assert touched == [page]


def test_pages_no_longer_selected_are_removed_and_nothing_else(
    sample: Mirror, tmp_path: Path
) -> None:
    out = tmp_path / "md"
    sample.export("md", out)
    mine = out / "developer.chrome.com" / "my-notes.txt"
    mine.write_text("kept")
    outside = tmp_path / "outside.md"
    outside.write_text("kept")
    # A manifest edited to name a file outside OUT: that file is never touched.
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"].append("../outside.md")
    (out / MANIFEST).write_text(json.dumps(manifest))
    report = sample.export("md", out, prefix="www.tensorflow.org/")
    tensorflow = sum(1 for p in (out / "www.tensorflow.org").rglob("*.md"))
    assert report.pages == tensorflow and report.removed == 50 - tensorflow
    assert not any(p.suffix == ".md" for p in (out / "developer.chrome.com").rglob("*"))
    assert mine.read_text() == "kept" and outside.read_text() == "kept"
    assert "developer.chrome.com" not in (out / "index.md").read_text()


def test_a_lock_exports_its_versions_even_after_a_refresh_moved_them_on(
    sample: Mirror, sample_url: str, tmp_path: Path
) -> None:
    names = sorted(n.name for n in sample.list_documents(None, 100))[:3]
    requirements = tmp_path / "dk-mirror.toml"
    requirements.write_text("[docs]\nnames = [" + ", ".join(f'"{n}"' for n in names) + "]\n")
    lock = tmp_path / "dk-mirror.lock"
    sample.lock(requirements, lock)
    locked = {e.name: e for e in lockfile.read_lock_file(lock)}
    _change(sample_url, names[0], "# Moved on\n")
    report = sample.export("md", tmp_path / "md", lock=lock)
    assert report.pages == 3
    page = (tmp_path / "md" / mdpaths.relative_path(names[0])).read_text()
    assert locked[names[0]].sha256 in page and "Moved on" not in page


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [*args, "--offline"])
    return result.exit_code, result.stdout, result.stderr


def test_cli_summary_and_one_line_errors(sample_url: str, tmp_path: Path) -> None:
    db = ["--db", sample_url]
    code, out, _ = _run("export", "md", str(tmp_path / "md"), "--json", *db)
    summary = json.loads(out)
    assert code == 0 and (summary["pages"], summary["written"], summary["removed"]) == (50, 52, 0)
    code, _, err = _run("export", "llms", str(tmp_path / "md"), *db)
    assert code == 2 and "holds a `md` export" in err and "Traceback" not in err
    code, _, err = _run("export", "md", str(tmp_path / "x"), "--prefix", "nowhere.example/", *db)
    assert code == 2 and "no document with content matches" in err
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    code, _, err = _run("export", "md", str(tmp_path / "file"), *db)
    assert code == 2 and "file" in err
    code, _, err = _run("export", "md", str(tmp_path / "y"), "--max-bytes", "10", *db)
    assert code == 2 and "--max-bytes is not an option of `export md`" in err
    code, _, err = _run("export-md", str(tmp_path / "old"), *db)
    assert code == 0 and "wrote 50 documents" in err
    assert _tree(tmp_path / "old") == _tree(tmp_path / "md")
