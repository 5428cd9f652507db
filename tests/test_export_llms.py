"""`dk-mirror export llms`: llms.txt files (llmstxt.org: H1, blockquote, link lists) that link
every page once to a file that exists, and an llms-full.txt of whole pages under --max-bytes."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

import pytest

from mirror.errors import InvalidInput
from mirror.service import Mirror
from mirror.snapshots.mdpaths import relative_path

LINK = re.compile(r"^- \[(?:[^\]\\]|\\.)+\]\(([^)]+)\)", re.MULTILINE)


def test_llms_txt_links_every_page_once_to_its_markdown(sample: Mirror, tmp_path: Path) -> None:
    out = tmp_path / "llms"
    report = sample.export("llms", out)
    names = sorted(d.name for d in sample.list_documents(None, 100))
    root = (out / "llms.txt").read_text()
    assert root.startswith("# Google developer documentation\n\n> 50 pages from 2 data source")
    hosts = LINK.findall(root)
    assert hosts == [
        "developer.chrome.com/llms.txt",
        "www.tensorflow.org/llms.txt",
        "llms-full.txt",
    ]
    linked: list[Path] = []
    for index in hosts[:2]:
        text = (out / index).read_text()
        assert text.startswith(f"# {index.split('/')[0]}\n\n> ") and "\n## " in text
        linked += [(out / index).parent / unquote(t) for t in LINK.findall(text)]
    assert sorted(linked) == sorted(out / relative_path(n) for n in names)
    assert all(p.is_file() for p in linked)
    page = (out / relative_path(names[0])).read_text()
    assert page.startswith("# ") and "Source: <https://" in page and "CC BY 4.0" in page
    full = (out / "llms-full.txt").read_text()
    assert report.notes == [] and all(p.read_text() in full for p in linked)


def test_llms_full_holds_whole_pages_under_max_bytes_and_says_what_is_left_out(
    sample: Mirror, tmp_path: Path
) -> None:
    out = tmp_path / "llms"
    report = sample.export("llms", out, options={"max_bytes": 60_000})
    full = (out / "llms-full.txt").read_bytes()
    assert len(full) <= 60_000
    names = sorted(d.name for d in sample.list_documents(None, 100))
    pages = [(out / relative_path(n)).read_text() for n in names]
    inside = [p in full.decode() for p in pages]
    kept = inside.index(False)
    assert kept > 0 and not any(inside[kept:])  # a run of whole pages, then none
    assert f"Left out: {50 - kept} pages, from `{names[kept]}`" in full.decode()
    assert report.notes == [
        f"llms-full.txt holds {kept} of 50 pages; the {50 - kept} from {names[kept]} on did "
        "not fit in 60000 bytes (--max-bytes)"
    ]
    assert f"{kept} of 50 pages" in (out / "llms.txt").read_text()
    for too_small in (100, 0):
        with pytest.raises(InvalidInput, match="leaves no room"):
            sample.export("llms", out, options={"max_bytes": too_small})
    assert PurePosixPath("llms-full.txt").name in {p.name for p in out.iterdir()}
