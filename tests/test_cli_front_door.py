"""What a new user meets at the CLI: partial --json gets, suggestions on a miss, usage errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mirror.errors import AuthError, InvalidInput, PermissionDenied
from mirror.upstream.retry import RetryPolicy
from tests.conftest import seed
from tests.emulator import Fault

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

TF = "documents/www.tensorflow.org/hub/caching"
TF2 = "documents/www.tensorflow.org/hub/installation"
TF_GHOST = "documents/www.tensorflow.org/hub/cachinq"
SEARCH = "/v1/documents:searchDocumentChunks"


@pytest.fixture
def run(cli_online):  # type: ignore[no-untyped-def]
    """The CLI against the emulator and the test's store (tests/conftest.py)."""
    return cli_online


def test_get_json_offline_prints_what_it_has_and_names_the_rest(run):
    assert run("fetch", TF).exit_code == 0
    result = run("--offline", "get", "--json", TF, TF2)
    assert result.exit_code == 4
    data = json.loads(result.stdout)
    assert [d["name"] for d in data["documents"]] == [TF]
    assert data["_mirror"]["missing"] == [TF2]
    assert [s["name"] for s in data["_mirror"]["served"]] == [TF]
    assert "not in the local store" in result.stderr


def test_get_json_online_keeps_the_found_and_exits_not_found(run):
    result = run("get", "--json", TF, "documents/www.tensorflow.org/nope")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert [d["name"] for d in data["documents"]] == [TF]
    assert data["_mirror"]["missing"] == ["documents/www.tensorflow.org/nope"]
    whole = run("get", "--json", TF, TF2)
    assert whole.exit_code == 0 and json.loads(whole.stdout)["_mirror"]["missing"] == []


def test_not_found_names_the_nearest_cached_documents(run):
    assert run("fetch", TF, TF2).exit_code == 0
    result = run("get", TF_GHOST)
    assert result.exit_code == 3
    assert f"nearest cached to {TF_GHOST}: {TF}" in result.stderr
    offline = run("--offline", "get", TF_GHOST)
    assert offline.exit_code == 4 and f"nearest cached to {TF_GHOST}: {TF}" in offline.stderr


def test_suggestions_skip_metadata_only_rows(make_mirror, emulator):
    online = make_mirror()
    page = online.search_documents("tensorflow hub caching", page_size=10)
    seen = {r.parent for r in page.page.results}
    assert TF in seen  # now a metadata-only row: known, but not readable offline
    assert online.suggest_names(TF_GHOST) == []
    seed(online, [online.get_documents([TF2]).documents[0]], fetched_at=1.0)
    assert online.suggest_names(TF_GHOST) == [TF2]


@pytest.mark.parametrize("text", ["", "# only a comment\n\n   \n"])
def test_a_names_file_without_names_says_so(run, tmp_path: Path, text):
    names = tmp_path / "names.txt"
    names.write_text(text)
    result = run("fetch", "--names-file", str(names))
    assert result.exit_code == 2
    assert "names.txt has no names" in result.stderr


@pytest.mark.parametrize("token", ["abc", "local.%%%", "local.eyJvIjoxZTk5OSwiayI6MX0"])
def test_a_bad_page_token_is_a_usage_error(make_mirror, token):
    offline = make_mirror(offline=True)
    with pytest.raises(InvalidInput) as caught:
        offline.search_documents("tensorflow", page_token=token)
    assert caught.value.hint and "--page-token" in caught.value.hint


def test_a_local_page_token_pages_the_local_index_even_online(make_mirror, emulator):
    online = make_mirror()
    online.fetch([TF, TF2])
    token = make_mirror(offline=True).search_documents("tensorflow hub", page_size=1)
    assert token.page.next_page_token
    emulator.reset()
    second = online.search_documents(
        "tensorflow hub", page_size=1, page_token=token.page.next_page_token
    )
    assert second.source == "local" and emulator.count(SEARCH) == 0


def test_search_offline_fetch_is_refused(run):
    result = run("search", "tensorflow", "--offline", "--fetch")
    assert result.exit_code == 2
    assert "--fetch needs the network" in result.stderr


def test_search_falls_back_only_on_transient_failures(make_mirror, emulator):
    mirror = make_mirror(retry=RetryPolicy(max_attempts=1, sleep=lambda _s: None))
    emulator.inject(Fault(kind="status", status=503), times=1, path=SEARCH)
    assert mirror.search_documents("keras guide").source == "local"
    with pytest.raises(AuthError):
        make_mirror(api_key="wrong-key").search_documents("keras guide")
    emulator.api_disabled = True
    with pytest.raises(PermissionDenied):
        mirror.search_documents("keras guide")


def test_search_after_a_rejected_key_exits_1(run, monkeypatch):
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", "wrong-key")
    result = run("search", "keras guide")
    assert result.exit_code == 1 and "API key not valid" in result.stderr
    assert "answered offline" not in result.stderr


def test_migrating_a_new_store_logs_nothing_at_info(db_url, caplog):
    from mirror.store.store import Store

    logging.getLogger("alembic").setLevel(logging.NOTSET)
    with caplog.at_level(logging.INFO):
        Store.open(db_url).close()
    assert [r for r in caplog.records if r.name.startswith("alembic")] == []


def _records(path: Path, docs: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def test_import_keeps_newer_stored_copies_and_reports_them(run, tmp_path: Path):
    assert run("fetch", TF, TF2).exit_code == 0
    fetched = json.loads(run("--offline", "get", "--json", TF).stdout)["documents"][0]
    assert fetched["updateTime"]
    older = {**fetched, "content": "# old copy\n", "updateTime": "2001-01-01T00:00:00Z"}
    undated = {"name": TF2, "content": "# no updateTime\n"}
    new_name = "documents/example.com/new"
    fresh = {"name": new_name, "content": "# new\n", "updateTime": "2001-01-01T00:00:00Z"}
    records = _records(tmp_path / "docs.jsonl", [older, undated, fresh])
    result = run("import", str(records), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["imported"] == 1 and report["skipped"] == [TF, TF2]
    kept = run("--offline", "get", TF)
    assert not kept.stdout.startswith("# old copy")
    text = run("import", str(records))
    assert "kept 2 newer stored copies" in text.stderr and f"kept newer: {TF}" in text.stderr
    forced = json.loads(run("import", str(records), "--overwrite", "--json").stdout)
    assert forced == {**forced, "imported": 3, "skipped": []}
    # The fetched copies were replaced by other content; the new page is the same as before.
    assert (forced["new"], forced["changed"], forced["unchanged"]) == (0, 2, 1)
    assert run("--offline", "get", TF).stdout.startswith("# old copy")


def test_import_sample_json(run):
    result = run("import", "--sample", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["imported"] == 50


def test_an_import_says_how_many_pages_were_new_changed_or_unchanged(run):
    first = json.loads(run("import", "--sample", "--json").stdout)
    assert (first["new"], first["changed"], first["unchanged"]) == (50, 0, 0)
    # Again on the same store: nothing new, and the text says so rather than "imported 50".
    again = run("import", "--sample")
    assert again.exit_code == 0
    assert "imported 50 documents (0 new, 0 changed, 50 unchanged)" in again.stderr


def test_metadata_only_rows_are_marked_and_counted_apart(run, make_mirror):
    assert run("fetch", TF2).exit_code == 0
    page = make_mirror().search_documents("tensorflow hub caching", page_size=10)
    known = {r.parent for r in page.page.results} - {TF2}
    assert TF in known
    listing = run("ls", "--prefix", "www.tensorflow.org/hub")
    line = next(x for x in listing.stdout.splitlines() if x.startswith(TF + " "))
    assert "metadata only" in line
    line2 = next(x for x in listing.stdout.splitlines() if x.startswith(TF2 + " "))
    assert "metadata only" not in line2
    rows = [json.loads(x) for x in run("ls", "--json").stdout.splitlines()]
    assert {r["name"]: r["hasContent"] for r in rows}[TF] is False
    status = run("status")
    assert f"1 document (+{len(known)} known from search results, metadata only)" in status.stdout
    data = json.loads(run("status", "--json").stdout)
    assert data["withContent"] == 1 and data["metadataOnly"] == len(known)


def _doctor_rows(run, *args: str) -> dict[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    result = run(*args, "doctor", "--json")
    return {row["check"]: {**row, "exit": result.exit_code} for row in json.loads(result.stdout)}


def test_doctor_makes_one_real_upstream_request(run, emulator, monkeypatch):
    assert run("db", "upgrade").exit_code == 0  # doctor reads a store; it never makes one
    emulator.reset()
    rows = _doctor_rows(run)
    assert rows["api key"]["level"] == "ok" and "is set" in rows["api key"]["detail"]
    assert rows["upstream"]["level"] == "ok" and rows["upstream"]["exit"] == 0
    assert emulator.count() == 1
    assert emulator.requests[0].query.get("view") == ["DOCUMENT_VIEW_BASIC"]
    emulator.reset()
    assert _doctor_rows(run, "--offline")["network"]["level"] == "ok"
    assert emulator.count() == 0

    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", "wrong-key")
    bad = _doctor_rows(run)["upstream"]
    assert bad["level"] == "fail" and "bad key" in bad["detail"] and bad["exit"] == 1
    assert "wrong-key" not in bad["detail"]
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", emulator.api_key)
    emulator.api_disabled = True
    assert "API disabled" in _doctor_rows(run)["upstream"]["detail"]
    emulator.api_disabled = False
    monkeypatch.delenv("DEVELOPER_KNOWLEDGE_API_KEY")
    unset = _doctor_rows(run)
    assert "is not set" in unset["api key"]["detail"]
    assert "no key" in unset["upstream"]["detail"]


def test_doctor_reports_an_unreachable_host_quickly(run, monkeypatch):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", f"http://127.0.0.1:{port}")
    row = _doctor_rows(run)["upstream"]
    assert row["level"] == "fail" and "unreachable" in row["detail"]


def test_a_fetch_without_a_key_says_the_variable_is_unset(run, monkeypatch):
    monkeypatch.delenv("DEVELOPER_KNOWLEDGE_API_KEY")
    for args in (["fetch", TF], ["--transport", "mcp", "get", TF]):
        result = run(*args)
        assert result.exit_code == 1
        assert "DEVELOPER_KNOWLEDGE_API_KEY is not set" in result.stderr, result.stderr
        assert "not valid" not in result.stderr
    google = run("--upstream", "https://developerknowledge.googleapis.com", "get", TF)
    assert google.exit_code == 1 and "set DEVELOPER_KNOWLEDGE_API_KEY" in google.stderr


def test_status_on_an_empty_store_says_nothing_was_fetched(run):
    assert run("db", "upgrade").exit_code == 0  # a new, empty store (status never makes one)
    result = run("status")
    assert result.exit_code == 0
    assert "nothing fetched yet" in result.stdout and "never" not in result.stdout
    assert "documents: 0 documents\n" in result.stdout


def test_a_folder_as_the_store_gets_one_message_from_reads_and_writes(run, tmp_path: Path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    reads = (["status"], ["--offline", "get", TF], ["ls"])
    writes = (["import", "--sample"], ["fetch", TF], ["db", "upgrade"], ["get", TF])
    for args in (*reads, *writes):
        result = run("--db", str(folder), *args)
        assert result.exit_code == 1, (args, result.stderr)
        assert result.stderr.startswith(f"error: {folder} is a folder, not a store\n"), (
            args,
            result.stderr,
        )
        assert "unable to open database file" not in result.stderr
    assert list(folder.iterdir()) == []
