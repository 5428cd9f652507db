"""`dk-mirror crawl` as a user runs it (output, exit codes, stdin), progress lines, and
`dk-mirror lock` resolving a prefix on a fresh machine by crawling it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from mirror.cli.crawl_progress import CrawlDisplay
from mirror.service.crawl import CrawlProgress
from tests.emulator import Emulator, Fault
from tests.emulator_fixtures import corpus_documents

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

HUB = "documents/www.tensorflow.org/hub"
HUB_DOCS = sorted(
    d["name"] for d in corpus_documents("tensorflow.org") if d["name"].startswith(HUB + "/")
)


def test_crawl_prints_a_summary_and_json(cli_online, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The crawl's 404 batches split into more calls than the 100/min quota's burst: lifted,
    # since the summary is tested here and the pacing in test_pacing.py (16 s -> under 2 s).
    monkeypatch.setenv("DK_MIRROR_GET_PER_MINUTE", "1000000")
    text = cli_online(
        "crawl", f"{HUB}/overview", "--prefix", "www.tensorflow.org/hub/", "--depth", "1"
    )
    assert text.exit_code == 0, text.stderr
    assert "fetched, 0 already had, 0 unchanged" in text.stderr and "known" in text.stderr
    assert re.search(
        r"upstream calls: \d+, \d+ of them on names upstream does not have", text.stderr
    )
    again = cli_online(
        "crawl", f"{HUB}/overview", "--prefix", "www.tensorflow.org/hub/", "--depth", "1",
        "--json", "--links-only",
    )  # fmt: skip
    assert again.exit_code == 0
    report = json.loads(again.stdout)
    assert report["fetched"] == 0 and report["alreadyHad"] >= 1
    assert report["alreadyHad"] + len(report["missing"]) == report["known"] > 1
    assert list(report) == [
        "known", "fetched", "alreadyHad", "unchanged", "missing", "failed", "queued",
        "thisRun", "skipped", "skippedFrom", "resumed", "requests", "retries", "quotaWaitSeconds",
        "notFoundCalls", "error", "hint", "stopped",
        "interrupted", "warnings", "foundBy", "sectionSearches", "searchResultsLeftOut", "pages",
    ]  # fmt: skip
    assert report["requests"] == 0


def test_crawl_reads_seeds_from_stdin_and_names_files(cli_online, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    piped = cli_online("crawl", "--depth", "0", "--json", input=f"{HUB}/caching\n# a comment\n")
    assert piped.exit_code == 0, piped.stderr
    assert json.loads(piped.stdout)["fetched"] == 1
    listed = tmp_path / "seeds.txt"
    listed.write_text(f"{HUB}/hosting\n{HUB}/publish\n")
    from_file = cli_online("crawl", "--names-file", str(listed), "--depth", "0", "--json")
    assert json.loads(from_file.stdout)["fetched"] == 2
    nothing = cli_online("crawl", input="")
    assert nothing.exit_code == 2 and "has no names" in nothing.stderr


def test_a_failed_batch_exits_1_naming_it(cli_online, emulator: Emulator, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("mirror.interrupts.sleep", lambda _s: None)
    emulator.inject(Fault("status", status=503), times=-1)
    failed = cli_online("crawl", f"{HUB}/caching", "--depth", "0")
    assert failed.exit_code == 1
    assert (
        f"failed: {HUB}/caching" in failed.stderr and "run the same command again" in failed.stderr
    )


def test_progress_is_a_plain_line_every_few_seconds_without_a_terminal() -> None:
    stream = io.StringIO()
    display = CrawlDisplay(stream, every=0.0)
    display(CrawlProgress(done=40, known=100, fetched=30, retries=2, quota_wait=1.5, in_flight=3))
    line = stream.getvalue()
    assert line.startswith("crawl: 40/100 documents, ") and "/s, ETA " in line
    assert "30 fetched, 2 retries, 1.5s waiting for quota" in line
    quiet = io.StringIO()
    CrawlDisplay(quiet, every=3600)(CrawlProgress(1, 2, 1, 0, 0.0, 0))
    assert quiet.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_live_bar_on_a_terminal() -> None:
    terminal = _Terminal()
    display = CrawlDisplay(terminal)
    display(CrawlProgress(done=5, known=10, fetched=5, retries=0, quota_wait=0.0, in_flight=1))
    display(CrawlProgress(done=20, known=40, fetched=18, retries=3, quota_wait=2.0, in_flight=2))
    display.close()
    shown = terminal.getvalue()
    assert "20/40" in shown and "3 retries" in shown and "2.0s waiting for quota" in shown


@pytest.fixture
def fresh_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose dk-mirror.toml names only a prefix, on a machine with an empty store."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dk-mirror.toml").write_text('[docs]\nprefixes = ["www.tensorflow.org/hub/"]\n')
    return tmp_path


def test_lock_resolves_a_prefix_on_a_fresh_machine_by_crawling(  # type: ignore[no-untyped-def]
    cli_online, emulator: Emulator, fresh_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DK_MIRROR_GET_PER_MINUTE", "1000000")  # the quota's wait: not tested here
    locked = cli_online("lock")
    assert locked.exit_code == 0, locked.stderr
    lines = (fresh_project / "dk-mirror.lock").read_text().splitlines()
    names = sorted(line.split()[0] for line in lines if line.startswith("documents/"))
    # Discovery finds what is linked or searchable: every page under the prefix but
    # `publish`, which the others link to by its source file (`publish.md`, a name upstream
    # does not have) and a search for "hub" does not reach.
    assert names == [n for n in HUB_DOCS if n != f"{HUB}/publish"]
    searches = [r for r in emulator.requests if "searchDocumentChunks" in r.path]
    assert searches and searches[0].query["filter"] == ['data_source = "www.tensorflow.org"']


def test_lock_offline_still_needs_the_documents_cached(cli_offline, fresh_project: Path) -> None:  # type: ignore[no-untyped-def]
    offline = cli_offline("lock")
    assert offline.exit_code != 0 and "no cached document starts with" in offline.stderr


def test_search_results_outside_the_prefix_are_counted_as_left_out(cli_online) -> None:  # type: ignore[no-untyped-def]
    args = ["crawl", "--search", "model", "--filter", 'data_source = "www.tensorflow.org"']
    args += ["--prefix", "www.tensorflow.org/hub/", "--depth", "0"]
    text = cli_online(*args)
    assert text.exit_code == 0, text.stderr
    left = re.search(r"search results left out: (\d+) \(outside --prefix\)", text.stderr)
    assert left and int(left.group(1)) > 0, text.stderr
    report = json.loads(cli_online(*args, "--json").stdout)
    # Every name taken was found by the search, and lies inside the prefix.
    assert report["foundBy"]["search"] == report["known"] > 0
    assert all(p["foundBy"] == "search" and HUB in p["name"] for p in report["pages"])


def test_a_names_file_is_a_list_of_pages_not_sections_to_search(  # type: ignore[no-untyped-def]
    cli_online, emulator, tmp_path: Path
) -> None:
    """Seeds from a names file (hundreds of pages, often) are not each searched for "the rest
    of their section": that spent the Search quota on what nobody asked for. A seed given as
    an argument still is, when links run out."""
    names = tmp_path / "seeds.txt"
    names.write_text(f"{HUB}/overview\n", encoding="utf-8")
    listed = cli_online("crawl", "--names-file", str(names), "--depth", "0", "--json")
    assert listed.exit_code == 0, listed.stderr
    searched = [r for r in emulator.requests if "search" in r.path.lower()]
    assert searched == [] and json.loads(listed.stdout)["sectionSearches"] == []
    emulator.reset()
    named = cli_online("crawl", f"{HUB}/overview", "--depth", "0", "--json")
    assert named.exit_code == 0, named.stderr
    assert json.loads(named.stdout)["sectionSearches"]
