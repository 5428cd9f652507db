"""Every `dk-mirror crawl` line of the README, run as written against the test upstream, mirrors
what its comment says: a section whose landing page is only a title is still mirrored whole
(search finds what links do not), search results are taken, bounds hold, and each page says how
it was found."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator_fixtures import corpus_documents

ROOT = Path(__file__).resolve().parents[1]
SECTION = "documents/developer.chrome.com/docs/extensions"
# The section's landing page, as real ones often are: a title and nothing to follow.
LANDING = {"name": SECTION, "title": "Chrome Extensions", "content": "# Chrome Extensions\n"}
NAME = f"{SECTION}/migrating"  # the README's NAME: a page with a broken link
BROKEN = f"{SECTION}/migrating/no-such-page"
SEEDS = [f"{SECTION}/mv2/manifest/icons", "documents/developer.chrome.com/articles/at-scope"]


def _readme_crawl_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Mirror a whole site") :]
    block = section[section.index("```sh") : section.index("```", section.index("```sh") + 5)]
    return [
        line.split("  #")[0].strip()
        for line in block.splitlines()
        if line.startswith("dk-mirror crawl")
    ]


LINES = _readme_crawl_lines()


def _corpus() -> list[dict[str, Any]]:
    docs = [LANDING]
    for doc in corpus_documents("developer.chrome.com-en"):
        if doc["name"] == NAME:
            doc = {
                **doc,
                "content": doc["content"] + "\n[gone](/docs/extensions/migrating/no-such-page)\n",
            }
        docs.append(doc)
    return docs


CORPUS = _corpus()
IN_SECTION = {
    d["name"] for d in CORPUS if d["name"] == SECTION or d["name"].startswith(SECTION + "/")
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Emulator]:
    with Emulator(CORPUS) as running:
        yield running


def _run(
    line: str, tmp_path: Path, upstream: Emulator
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    (tmp_path / "seeds.txt").write_text("\n".join(SEEDS) + "\n", encoding="utf-8")
    args = [NAME.removeprefix("documents/") if a == "NAME" else a for a in shlex.split(line)[1:]]
    env = {
        **os.environ,
        "DK_MIRROR_DB": str(tmp_path / "store.sqlite3"),
        "DK_MIRROR_UPSTREAM": upstream.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": upstream.api_key or "",
        "DK_MIRROR_GET_PER_MINUTE": "1000000",
        "DK_MIRROR_SEARCH_PER_MINUTE": "1000000",
    }
    done = subprocess.run(
        [sys.executable, "-m", "mirror", *args],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
        stored = {
            n for (n,) in conn.execute("SELECT name FROM documents WHERE content IS NOT NULL")
        }
    return done, stored


def test_the_readme_shows_each_kind_of_crawl() -> None:
    assert len(LINES) == 6, LINES


@pytest.mark.parametrize(
    "line",
    [
        line
        for line in LINES
        if "--prefix" not in line and "--search" not in line and "NAME" not in line
    ],
)
def test_a_section_is_mirrored_whole_though_its_landing_page_links_nowhere(
    line: str, tmp_path: Path, upstream: Emulator
) -> None:
    done, stored = _run(line, tmp_path, upstream)
    assert done.returncode == 0, done.stderr
    assert stored == IN_SECTION  # the whole section, and nothing outside it
    assert re.search(r"found: 1 seed\(s\), \d+ by link, \d+ by search", done.stderr), done.stderr


@pytest.mark.parametrize("line", [line for line in LINES if "--prefix" in line])
def test_a_prefix_crawl_mirrors_everything_under_the_prefix(
    line: str, tmp_path: Path, upstream: Emulator
) -> None:
    done, stored = _run(line, tmp_path, upstream)
    assert done.returncode == 0, done.stderr
    assert stored == IN_SECTION


@pytest.mark.parametrize("line", [line for line in LINES if "--search" in line])
def test_search_results_are_always_taken_without_a_prefix(
    line: str, tmp_path: Path, upstream: Emulator
) -> None:
    done, stored = _run(line, tmp_path, upstream)
    assert done.returncode == 0, done.stderr
    hits = upstream._search("service worker", 'data_source = "developer.chrome.com"')[:200]
    assert {h.doc["name"] for h in hits} | set(SEEDS) <= stored
    assert "left out" not in done.stderr


@pytest.mark.parametrize("line", [line for line in LINES if "--max-docs" in line])
def test_a_bounded_crawl_takes_at_most_max_docs_and_says_how_each_was_found(
    line: str, tmp_path: Path, upstream: Emulator
) -> None:
    done, stored = _run(line, tmp_path, upstream)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["known"] <= 500 and len(stored) <= 500
    ways = {p["name"]: p["foundBy"] for p in report["pages"]}
    assert ways[NAME] == "seed" and ways[BROKEN] == "link"
    assert sum(report["foundBy"].values()) == report["known"] == len(ways)
    assert BROKEN in report["missing"]


@pytest.mark.parametrize("line", [line for line in LINES if "--retry-missing" in line])
def test_retry_missing_asks_again_for_a_broken_link(
    line: str, tmp_path: Path, upstream: Emulator
) -> None:
    first, _ = _run(line.replace(" --retry-missing", ""), tmp_path, upstream)
    assert first.returncode == 0, first.stderr
    upstream.reset()
    done, _ = _run(line, tmp_path, upstream)
    assert done.returncode == 0, done.stderr
    asked = {n for r in upstream.requests if "batchGet" in r.path for n in r.query["names"]}
    assert BROKEN in asked and f"missing: {BROKEN}" in done.stderr


# A page whose links run into more missing pages in a row than a crawl follows (MISSING_RUN),
# with a real page after them that no search of the section finds (only its link leads to it).
REAL_AFTER = f"{SECTION}/migrating/zz-real"
MANY_BROKEN = {
    "name": NAME,
    "title": "Migrating",
    "content": "# Migrating\n\n"
    + "".join(f"[gone {i}](/docs/extensions/migrating/gone-{i:03d})\n" for i in range(250))
    + "[real](/docs/extensions/migrating/zz-real)\n",
}
HIDDEN = {"name": REAL_AFTER, "title": "Kept", "content": "# Kept\n\nOnly a link leads here.\n"}


@pytest.mark.parametrize("line", [line for line in LINES if "--follow-broken-links" in line])
def test_follow_broken_links_reaches_the_pages_a_run_of_misses_hid(
    line: str, tmp_path: Path
) -> None:
    docs = [MANY_BROKEN, HIDDEN]
    with Emulator(docs) as upstream:
        first, stored = _run(line.replace(" --follow-broken-links", ""), tmp_path, upstream)
        assert first.returncode == 0, first.stderr
        assert REAL_AFTER not in stored and "--follow-broken-links" in first.stderr
        done, stored = _run(line, tmp_path, upstream)
    assert done.returncode == 0, done.stderr
    assert REAL_AFTER in stored
