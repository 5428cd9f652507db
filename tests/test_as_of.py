"""`--as-of`: the store answers as it was at a past instant, from its kept versions; the drill
of two refreshes a day apart (the emulator changes a page in between), on SQLite and
PostgreSQL, through the service, the CLI (get, ls, search, export-md, snapshot export) and
`serve` (REST with Memento-Datetime, MCP)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.errors import InvalidInput, NotThen
from mirror.models import Document, rfc3339
from mirror.service import Mirror
from mirror.store.as_of_view import AsOfStore

from .conftest import no_wait_retry
from .emulator import Emulator
from .emulator_fixtures import corpus_documents

pytestmark = pytest.mark.both_backends

T1 = 1_780_000_000.0  # the first fetch
T2 = T1 + 86_400.0  # the refresh a day later, after upstream changed a page
BETWEEN = T1 + 3_600.0
NEW_WORD = "zebrafish"


@dataclass
class Drill:
    """A store fetched at T1 and refreshed at T2, upstream having changed `changed` between,
    and `late` first fetched at T2."""

    db_url: str
    changed: str
    old: str  # its content as fetched at T1, byte for byte
    new: str
    old_update_time: str
    unchanged: str
    late: str

    def mirror(self, as_of: float | None = None) -> Mirror:
        return Mirror(Settings(db_url=self.db_url, offline=True), as_of=as_of)


@pytest.fixture
def drill(db_url: str) -> Iterator[Drill]:
    docs = corpus_documents("tensorflow.org")[:4]
    first, late = docs[:3], docs[3]
    with Emulator(first, api_key="test-key") as upstream:
        now = [T1]
        settings = Settings(db_url=db_url, upstream=upstream.base_url, api_key="test-key")
        with Mirror(settings, retry=no_wait_retry(), clock=lambda: now[0]) as mirror:
            assert mirror.fetch([d["name"] for d in first]).fetched == 3
            changed = first[0]
            stored = mirror.get_documents([changed["name"]]).documents[0]
            new = changed["content"] + f"\nKeras 3 replaces the {NEW_WORD} example.\n"
            upstream.put({**changed, "content": new})
            upstream.put(late)
            now[0] = T2
            assert mirror.refresh().changed == [changed["name"]]
            assert mirror.fetch([late["name"]]).fetched == 1
    assert stored.content == changed["content"] and stored.update_time
    yield Drill(db_url, changed["name"], changed["content"], new, stored.update_time,
                first[1]["name"], late["name"])  # fmt: skip


def test_as_of_between_two_refreshes_returns_the_older_content_byte_exact(drill: Drill) -> None:
    with drill.mirror(BETWEEN) as past, drill.mirror() as now:
        then = past.get_documents([drill.changed, drill.unchanged])
        current = now.get_documents([drill.changed]).documents[0]
    assert then.documents[0].content == drill.old
    assert then.documents[0].update_time == drill.old_update_time
    assert current.content == drill.new != drill.old
    assert [s.fetched_at for s in then.served] == [T1, T1]
    assert then.as_of == BETWEEN
    # At T2 and after, the newer version.
    with drill.mirror(T2) as later:
        assert later.get_documents([drill.changed]).documents[0].content == drill.new


def test_cli_get_as_of_prints_the_older_bytes_and_json_provenance(
    drill: Drill, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke = _cli(drill, monkeypatch)
    plain = invoke("get", drill.changed, "--as-of", rfc3339(BETWEEN) or "")
    assert plain.exit_code == 0, plain.stderr
    assert plain.stdout_bytes == drill.old.encode()  # the corpus page ends with a newline
    assert invoke("get", drill.changed).stdout_bytes == drill.new.encode()
    data = json.loads(
        invoke("get", drill.changed, "--json", "--as-of", "2026-05-28T21:26:40Z").stdout
    )
    assert data["documents"][0]["content"] == drill.old
    assert data["_mirror"]["asOf"] == "2026-05-28T21:26:40.000Z"
    assert data["_mirror"]["served"] == [
        {"name": drill.changed, "source": "cache", "fetchedAt": rfc3339(T1),
         "updateTime": drill.old_update_time}
    ]  # fmt: skip
    now = json.loads(invoke("get", drill.changed, "--json").stdout)["_mirror"]
    assert now["asOf"] is None and now["served"][0]["updateTime"] != drill.old_update_time


def test_pages_not_yet_fetched_then_are_absent_and_pruned_ones_say_so(
    drill: Drill, monkeypatch: pytest.MonkeyPatch
) -> None:
    with drill.mirror(BETWEEN) as past, pytest.raises(NotThen) as late:
        past.get_documents([drill.late])
    assert late.value.names == [drill.late] and late.value.pruned == []
    assert "not yet fetched then" in late.value.message
    with drill.mirror(T1 - 1) as before, pytest.raises(NotThen):
        before.get_documents([drill.unchanged])
    with drill.mirror() as now:
        assert now.prune_history(keep=1) == 1  # version 1 of the changed page goes
    with drill.mirror(BETWEEN) as past:
        with pytest.raises(NotThen) as pruned:
            past.get_documents([drill.changed])
        assert [d.name for d in past.list_documents()] == [drill.unchanged, *_third(drill)]
        assert past.pruned_then() == [drill.changed]
    assert pruned.value.pruned == [drill.changed] and "pruned" in pruned.value.message
    result = _cli(drill, monkeypatch)("get", drill.changed, "--as-of", rfc3339(BETWEEN) or "")
    assert result.exit_code == 4 and "was pruned" in result.stderr and result.stdout == ""
    listing = _cli(drill, monkeypatch)("ls", "--as-of", rfc3339(BETWEEN) or "")
    assert "1 document(s) left out" in listing.stderr and drill.changed not in listing.stdout


def test_ls_search_and_exports_as_of(
    drill: Drill, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    invoke = _cli(drill, monkeypatch)
    when = rfc3339(BETWEEN) or ""
    listed = [
        json.loads(line) for line in invoke("ls", "--json", "--as-of", when).stdout.splitlines()
    ]
    assert sorted(item["name"] for item in listed) == sorted(
        [drill.changed, drill.unchanged, *_third(drill)]
    )
    assert all(item["fetchedAt"] == rfc3339(T1) for item in listed)
    assert drill.late in invoke("ls").stdout

    # The new paragraph is found now, not as of a time before it was written.
    assert _parents(invoke("search", NEW_WORD, "--json")) == [drill.changed]
    then = json.loads(invoke("search", NEW_WORD, "--json", "--as-of", when).stdout)
    assert then["results"] == [] and then["_mirror"]["asOf"] == when
    old_word = "tensorflow"
    found = json.loads(invoke("search", old_word, "--json", "--as-of", when).stdout)
    assert drill.late not in {r["parent"] for r in found["results"]}
    assert {d["fetchedAt"] for d in found["_mirror"]["documents"]} == {rfc3339(T1)}

    snapshot = tmp_path / "then.jsonl.gz"
    assert invoke("snapshot", "export", str(snapshot), "--as-of", when).exit_code == 0
    records = _records(snapshot)
    assert records[drill.changed] == drill.old and drill.late not in records
    markdown = tmp_path / "md"
    assert invoke("export-md", str(markdown), "--as-of", when).exit_code == 0
    page = next(markdown.rglob("*.md"), None)
    assert page is not None
    texts = "".join(p.read_text(encoding="utf-8") for p in markdown.rglob("*.md"))
    assert NEW_WORD not in texts and drill.old.splitlines()[0] in texts
    # `export FORMAT` reads through the same view: the pages as they were, the later one absent.
    llms = tmp_path / "llms"
    assert invoke("export", "llms", str(llms), "--as-of", when).exit_code == 0
    pages = "".join(p.read_text(encoding="utf-8") for p in llms.rglob("*.md"))
    assert NEW_WORD not in pages and drill.old.splitlines()[0] in pages
    assert invoke("export", "llms", str(tmp_path / "now")).exit_code == 0
    assert NEW_WORD in "".join(
        p.read_text(encoding="utf-8") for p in (tmp_path / "now").rglob("*.md")
    )


def test_cli_answer_json_says_how_fresh_each_page_it_quotes_is(
    drill: Drill, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As `search --json` and MCP's answer_query do: an agent reading the answer can tell
    # when each page it was grounded on was fetched.
    invoke = _cli(drill, monkeypatch)
    data = json.loads(invoke("answer", "tensorflow hub models", "--json").stdout)
    quoted = {
        r["documentReference"]["documentChunk"]["parent"] for r in data["answer"]["references"]
    }
    assert quoted
    held = data["_mirror"]["documents"]
    assert {d["name"] for d in held} == quoted
    assert all(d["source"] == "cache" and d["fetchedAt"] in (rfc3339(T1), rfc3339(T2))
               for d in held)  # fmt: skip
    assert all(d["updateTime"] for d in held)


def test_the_view_refuses_writes(drill: Drill) -> None:
    with drill.mirror(BETWEEN) as past:
        with pytest.raises(InvalidInput, match="read-only history"):
            past.prune_history(keep=1)
        with pytest.raises(InvalidInput, match="read-only history"):
            past.import_sample()


def test_bad_as_of_dates_and_fetching_the_past_are_usage_errors(
    drill: Drill, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke = _cli(drill, monkeypatch)
    for text in ("2026-02-30", "yesterday"):
        result = invoke("get", drill.changed, "--as-of", text)
        assert result.exit_code == 2 and "--as-of" in result.stderr
        assert "Traceback" not in result.output
    refreshing = invoke("get", drill.changed, "--refresh", "--as-of", "2026-05-29")
    assert refreshing.exit_code == 2 and "never fetched" in refreshing.stderr
    monkeypatch.delenv("DK_MIRROR_OFFLINE")
    serving = invoke("serve", "--as-of", "2026-05-29", "--allow-fetch", "--port", "0")
    assert serving.exit_code == 1 and "read-only: it cannot fetch" in serving.stderr


def test_the_view_searches_and_lists_history_as_of_then(drill: Drill) -> None:
    from mirror.store.as_of_view import AsOfStore
    from mirror.store.store import Store

    store = Store.open(drill.db_url)
    try:
        past, now = AsOfStore(store, BETWEEN), AsOfStore(store, T2)
        assert [v.number for v in past.versions(drill.changed)] == [1]
        assert [v.number for v in now.versions(drill.changed)] == [2, 1]
        newest = now.versions(drill.changed)[0].sha256
        assert past.version_document(drill.changed, newest) is None
        assert now.version_document(drill.changed, newest).content == drill.new  # type: ignore[union-attr]
        assert past.search_local(NEW_WORD) == []
        assert {hit.name for hit in now.search_local(NEW_WORD)} == {drill.changed}
        assert past.stats().documents == 3 and now.stats().documents == 4
    finally:
        store.close()


def _third(drill: Drill) -> list[str]:
    return [n for n in corpus_names()[:3] if n not in (drill.changed, drill.unchanged)]


def corpus_names() -> list[str]:
    return [d["name"] for d in corpus_documents("tensorflow.org")[:4]]


def _cli(drill: Drill, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DK_MIRROR_DB", drill.db_url)
    monkeypatch.setenv("DK_MIRROR_OFFLINE", "1")

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    return invoke


def _parents(result) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted({r["parent"] for r in json.loads(result.stdout)["results"]})


def _records(path: Path) -> dict[str, str]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    docs = [r["document"] for r in rows if "document" in r]
    return {d["name"]: d["content"] for d in docs}


def test_the_change_log_as_of_a_date_ends_then(drill: Drill) -> None:
    """`changes --as-of`, the feeds and list_changes under `serve --as-of` read the log as it
    stood then: the refresh at T2 had not happened at BETWEEN."""
    with drill.mirror() as now, drill.mirror(BETWEEN) as past:
        everything, then = now.changes(), past.changes()
    changed_later = [e for e in everything if e.name == drill.changed and e.kind == "changed"]
    assert changed_later and all(e.observed_at >= T2 for e in changed_later)
    assert then and all(e.observed_at <= BETWEEN for e in then)
    assert {e.id for e in then} == {e.id for e in everything if e.observed_at <= BETWEEN}


def test_symbols_as_of_a_date_are_those_of_the_pages_held_then(drill: Drill) -> None:
    later = T2 + 100
    with drill.mirror() as now:
        store = now._ctx().store  # the store `--as-of` wraps in its view
        chrome = [Document.from_api(d) for d in corpus_documents("developer.chrome.com-en")]
        store.put(chrome, fetched_at=later, upstream="test")
        everything = store.symbol_list()
        assert everything, "the chrome reference pages name symbols"
        between, after = AsOfStore(store, BETWEEN), AsOfStore(store, later)
        assert between.symbol_list() == [] and between.symbol_lookup("chrome.", 10) == []
        assert after.symbol_list() == everything
        some = everything[0]
        assert between.symbol_exact(some.name) is None and after.symbol_exact(some.name) == some
        with pytest.raises(InvalidInput, match="--as-of"):
            between.rebuild_symbols()
