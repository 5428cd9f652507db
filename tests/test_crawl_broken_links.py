"""A page of many links, most of them missing upstream: the crawl stops paying for them.

`batchGet` fails whole when one name is unknown, so every missing name costs about a call. A
crawl skips the rest of a page's links once 40 in a row turned out missing (crawl/broken.py),
says so, and follows them when asked (--follow-broken-links); a page whose real links are
scattered among broken ones is still followed to the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror.config import Settings
from mirror.crawl.broken import MISSING_RUN, BrokenLinks
from mirror.service import Mirror
from mirror.service.crawl import CrawlOptions, make_spec
from tests.conftest import no_wait_retry
from tests.emulator import Emulator

pytestmark = pytest.mark.both_backends

HOST = "docs.example.dev"
HUB = f"documents/{HOST}/guide/hub"
ROOT = Path(__file__).resolve().parents[1]


def _page(i: int) -> str:
    return f"documents/{HOST}/guide/page-{i:05d}"


def _site(links: list[int], real: set[int]) -> list[dict[str, Any]]:
    """The hub, linking to page i for each i of `links` in order; only `real` pages exist."""
    lines = "\n".join(f"- [page {i}](/guide/page-{i:05d})" for i in links)
    hub = {"name": HUB, "title": "Hub", "content": f"# Hub\n\n{lines}\n"}
    pages = [{"name": _page(i), "title": f"Page {i}", "content": f"# Page {i}\n"} for i in real]
    return [hub, *pages]


def _batch_gets(emu: Emulator) -> int:
    return sum(1 for r in emu.requests if r.path.endswith(":batchGet"))


@pytest.fixture
def crawl_with(db_url: str) -> Iterator[Any]:
    made: list[Mirror] = []

    def run(emu: Emulator, **options: Any) -> Any:
        mirror = Mirror(
            Settings(db_url=db_url, upstream=emu.base_url, api_key=emu.api_key),
            retry=no_wait_retry(),
        )
        made.append(mirror)
        spec = make_spec([HUB], prefixes=[f"{HOST}/guide/"])
        return mirror.crawl(spec, CrawlOptions(**options))

    yield run
    for mirror in made:
        mirror.close()


# 300 real links, then 1,700 that upstream does not have, then 50 real ones again.
BLOCK_LINKS = list(range(2050))
BLOCK_REAL = set(range(300)) | set(range(2000, 2050))


def test_a_run_of_missing_links_stops_costing_calls_and_is_reported(crawl_with: Any) -> None:
    with Emulator(_site(BLOCK_LINKS, BLOCK_REAL)) as emu:
        report = crawl_with(emu)
        first_calls = _batch_gets(emu)
        # Asked again, the skipped links are followed: every real page is stored in the end.
        again = crawl_with(emu, follow_broken_links=True)
    # Before: one call per missing name (some 1,700 calls); now the 300 real pages (15
    # batches) and the first run of missing ones, with the batches already in flight.
    assert first_calls <= 15 + 2 + 4 * 21 + 20, first_calls
    assert report.fetched == 1 + 300
    assert report.skipped >= 1700 - 4 * 20 - MISSING_RUN
    assert report.skipped_from == [HUB]
    assert report.to_json()["skipped"] == report.skipped
    assert again.skipped == 0
    assert again.fetched == 50  # the real pages after the broken run, found on the rerun


def test_real_links_scattered_among_broken_ones_are_all_followed(crawl_with: Any) -> None:
    # Every fourth link real: no run of misses reaches the limit, so none is lost.
    links = list(range(800))
    real = {i for i in links if i % 4 == 0}
    with Emulator(_site(links, real)) as emu:
        report = crawl_with(emu)
    assert report.skipped == 0
    assert report.fetched == 1 + len(real)
    assert len(report.missing) == len(links) - len(real)


def test_the_run_is_per_page_and_a_real_link_ends_it() -> None:
    links = BrokenLinks(run=3)
    for missing in (True, True, False, True, True):
        links.note("documents/a", missing)
    links.note("documents/b", True)
    assert not links.skips("documents/a") and not links.skips("documents/b")
    links.note("documents/a", True)  # three in a row now
    assert links.skips("documents/a") and not links.skips("documents/b")


def test_the_summary_says_how_many_were_skipped_and_how_to_follow_them(
    db_url: str, tmp_path: Path
) -> None:
    with Emulator(_site(BLOCK_LINKS, BLOCK_REAL), api_key="test-key") as emu:
        env = {
            **os.environ,
            "DK_MIRROR_DB": db_url,
            "DK_MIRROR_UPSTREAM": emu.base_url,
            "DEVELOPER_KNOWLEDGE_API_KEY": "test-key",
            "DK_MIRROR_GET_PER_MINUTE": "1000000",
            "PYTHONPATH": str(ROOT),
        }
        command = [sys.executable, "-m", "mirror", "crawl", HUB, "--prefix", f"{HOST}/guide/"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        as_json = subprocess.run(
            [*command, "--json"], env=env, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("skipped: ")]
    assert f"link(s) of {HUB}" in line and "--follow-broken-links" in line
    count = int(line.split()[1])
    assert count >= 1700 - 4 * 20 - MISSING_RUN
    # The rerun (a finished crawl walks again) skips them again, at no cost for the names
    # it already knows are missing.
    assert json.loads(as_json.stdout)["skipped"] >= 1700 - 4 * 20 - MISSING_RUN
