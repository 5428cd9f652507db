"""Search and answers on Mirror: recorded online, replayed offline, quota, staleness, paging."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.errors import InvalidInput, QuotaExceeded
from mirror.policy import Mode
from mirror.search.extractive import LABEL
from tests.conftest import seed, stored
from tests.emulator import Fault

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = [pytest.mark.both_backends, pytest.mark.shared_emulator]

SEARCH = "/v1/documents:searchDocumentChunks"
ANSWER = "/v1:answerQuery"


def _names(result):  # type: ignore[no-untyped-def]
    return [(r.parent, r.id) for r in result.page.results]


def test_online_search_is_recorded_and_replays_offline_identically(make_mirror, emulator):
    online = make_mirror()
    first = online.search_documents("caching model downloads", page_size=5)
    assert first.source == "upstream" and first.page.results
    assert emulator.count(SEARCH) == 1
    offline = make_mirror(offline=True)
    again = offline.search_documents("  Caching   model downloads ", page_size=5)
    assert again.source == "recorded"
    assert again.page.to_api() == first.page.to_api()
    assert emulator.count(SEARCH) == 1
    # Metadata of the hits is kept, so listings know the documents exist.
    names = {s.name for s in offline.list_documents()}
    assert {r.parent for r in first.page.results} <= names


def test_offline_without_recording_searches_the_local_index(make_mirror, emulator):
    online = make_mirror()
    online.fetch(
        [
            "documents/www.tensorflow.org/hub/caching",
            "documents/www.tensorflow.org/hub/installation",
        ]
    )
    emulator.reset()
    offline = make_mirror(offline=True)
    result = offline.search_documents("cache compressed model downloads")
    assert result.source == "local"
    assert result.page.results[0].parent == "documents/www.tensorflow.org/hub/caching"
    hit = result.page.results[0]
    assert hit.document is not None and hit.document.title
    assert 0.0 <= hit.relevance_score <= 1.0
    assert emulator.count() == 0


def test_local_page_tokens_walk_all_pages_without_repeats(make_mirror, emulator):
    from tests.emulator_fixtures import corpus_documents

    mirror = make_mirror(offline=True)
    seed(
        mirror,
        [
            __import__("mirror.models", fromlist=["Document"])
            .Document.from_api(d)
            .with_derived_fields()
            for d in corpus_documents("tensorflow.org")
        ],
        fetched_at=0.0,
        upstream="test",
    )
    seen, token, pages = [], None, 0
    while True:
        result = mirror.search_documents("tensorflow model", page_size=7, page_token=token)
        seen += _names(result)
        pages += 1
        token = result.page.next_page_token
        if not token:
            break
    assert pages > 2
    assert len(seen) == len(set(seen))
    with pytest.raises(InvalidInput, match="page token"):
        mirror.search_documents("other words", page_size=7, page_token=result_token(mirror))


def result_token(mirror):  # type: ignore[no-untyped-def]
    return mirror.search_documents("tensorflow model", page_size=7).page.next_page_token


def test_upstream_pages_replay_offline_page_by_page(make_mirror, emulator):
    online = make_mirror()
    tokens, pages = [None], []
    while True:
        page = online.search_documents("extension", page_size=20, page_token=tokens[-1])
        pages.append(_names(page))
        if not page.page.next_page_token or len(pages) == 3:
            break
        tokens.append(page.page.next_page_token)
    offline = make_mirror(offline=True)
    for token, expected in zip(tokens, pages, strict=True):
        replay = offline.search_documents("extension", page_size=20, page_token=token)
        assert replay.source == "recorded" and _names(replay) == expected


@pytest.mark.parametrize("query", ["", "   ", "x" * 501])
def test_empty_or_long_queries_are_refused_before_sending(mirror, emulator, query):
    with pytest.raises(InvalidInput):
        mirror.search_documents(query)
    assert emulator.count() == 0


def test_bad_filter_is_refused_with_a_position_before_sending(mirror, emulator):
    with pytest.raises(InvalidInput, match="column"):
        mirror.search_documents("tensorflow", filter='data_source = "x" AND')
    assert emulator.count() == 0


def test_upstream_failure_falls_back_to_the_recording(make_mirror, emulator):
    from mirror.upstream.retry import RetryPolicy

    mirror = make_mirror(retry=RetryPolicy(max_attempts=1, sleep=lambda _s: None))
    first = mirror.search_documents("keras guide")
    emulator.inject(Fault(kind="status", status=503), times=-1, path=SEARCH)
    again = mirror.search_documents("keras guide")
    assert again.source == "recorded" and again.warnings
    assert again.page.to_api() == first.page.to_api()


def test_answer_is_recorded_with_citations_and_fetches_references(make_mirror, emulator):
    mirror = make_mirror()
    result = mirror.answer_query("How do I cache TF Hub model downloads?")
    assert result.source == "upstream" and result.answer.answer_text
    assert result.answer.citations and result.answer.references
    cited = result.answer.reference_names
    assert set(stored(mirror, cited)) == set(cited)  # fetched into the store
    offline = make_mirror(offline=True)
    replay = offline.answer_query("how do I cache tf hub model downloads?")
    assert replay.source == "recorded" and not replay.stale
    assert replay.answer == result.answer


def test_recorded_answer_goes_stale_when_a_cited_document_changes(make_mirror, emulator):
    mirror = make_mirror()
    result = mirror.answer_query("How do I cache TF Hub model downloads?")
    changed = result.answer.reference_names[0]
    from tests.emulator_fixtures import corpus_documents

    doc = next(d for d in corpus_documents() if d["name"] == changed)
    emulator.put({**doc, "content": doc["content"] + "\n\nA new paragraph.\n"})
    mirror.get_documents([changed], Mode(refresh=True))
    replay = make_mirror(offline=True).answer_query("How do I cache TF Hub model downloads?")
    assert replay.stale and replay.stale_names == [changed]


def test_daily_answer_quota_is_refused_locally(make_mirror, emulator):
    mirror = make_mirror(answers_per_day=2)
    mirror.answer_query("What is TensorFlow Hub?")
    mirror.answer_query("How do I install tensorflow hub?")
    assert emulator.count(ANSWER) == 2
    # A recorded question is served from the recording, not sent.
    served = mirror.answer_query("What is TensorFlow Hub?")
    assert served.source == "recorded" and "quota" in served.warnings[0]
    with pytest.raises(QuotaExceeded, match="not sent"):
        mirror.answer_query("A question never asked before?")
    assert emulator.count(ANSWER) == 2
    # The count lives in the store: a new process (Mirror) sees it too.
    with pytest.raises(QuotaExceeded):
        make_mirror(answers_per_day=2).answer_query("Another new question?")


def test_offline_answer_without_recording_is_extractive_and_labelled(make_mirror, emulator):
    make_mirror().fetch(["documents/www.tensorflow.org/hub/caching"])
    emulator.reset()
    result = make_mirror(offline=True).answer_query("Where are compressed models cached?")
    assert result.source == "extractive"
    assert result.answer.answer_text.startswith(LABEL)
    assert result.answer.reference_names == ["documents/www.tensorflow.org/hub/caching"]
    from mirror.search.snippets import plain_text

    assert result.answer.citations
    for c in result.answer.citations:
        span = result.answer.answer_text.encode()[c.start_index : c.end_index].decode()
        (index,) = c.reference_indexes
        quoted = " ".join(plain_text(result.answer.references[index].content).split())
        assert span and span in quoted
    assert emulator.count() == 0


def test_cli_search_and_answer_output(db_url, emulator, monkeypatch):
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url)
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", emulator.api_key)
    runner = CliRunner()
    text = runner.invoke(cli, ["search", "caching model downloads", "--limit", "3"])
    assert text.exit_code == 0, text.stderr
    assert "1. " in text.stdout and "**" in text.stdout and "source: upstream" in text.stderr
    data = json.loads(runner.invoke(cli, ["search", "caching", "--json", "--offline"]).stdout)
    assert next(iter(data)) == "results" and data["_mirror"]["source"] in ("recorded", "local")
    ans = runner.invoke(cli, ["answer", "What is TensorFlow Hub?", "--json"])
    assert ans.exit_code == 0, ans.stderr
    body = json.loads(ans.stdout)
    assert body["answer"]["answerText"] and body["_mirror"]["quota"]["used"] == 1
    off = runner.invoke(cli, ["--offline", "answer", "What is TensorFlow Hub?"])
    assert "source: recorded" in off.stderr


def test_cli_offline_results_are_numbered_by_page(cli_offline):
    """A page's second chunk is shown under it ("+"), not counted as a result: the pages are
    numbered 1, 2, 3 (they were once numbered by chunk: 1, 3, 5)."""
    run = cli_offline
    assert run("import", "--sample").exit_code == 0
    result = run("search", "service worker lifecycle")
    assert result.exit_code == 0, result.stderr
    numbers = [int(n) for n in re.findall(r"^(\d+)\. ", result.stdout, re.M)]
    assert "\n   + " in result.stdout  # a second chunk of a page is shown
    assert len(numbers) >= 3 and numbers == list(range(1, len(numbers) + 1))


def test_no_key_searches_and_answers_locally_and_says_so(db_url, monkeypatch):
    """Google's upstream with no key set: a full store still answers (the README's promise),
    with a warning naming the missing key on stderr, and no quota is counted."""
    monkeypatch.setenv("DK_MIRROR_DB", db_url)  # the default upstream: Google's, which needs a key
    runner = CliRunner()
    assert runner.invoke(cli, ["import", "--sample"]).exit_code == 0
    for args in (
        ["search", "service worker lifecycle"],
        ["search", "service worker lifecycle", "--fetch"],
        ["answer", "How do I migrate my extension to a service worker?"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, (args, result.stderr)
        assert result.stdout.strip(), args
        assert "no API key (DEVELOPER_KNOWLEDGE_API_KEY is not set)" in result.stderr, args
        assert "answered from the local store" in result.stderr
    assert "--fetch fetched nothing" in runner.invoke(cli, ["search", "x y", "--fetch"]).stderr
    answered = runner.invoke(cli, ["answer", "What is a service worker?", "--json"])
    assert json.loads(answered.stdout)["_mirror"]["source"] == "extractive"
    assert json.loads(answered.stdout)["_mirror"]["quota"]["used"] is None


def test_an_unreachable_upstream_answers_from_the_store(make_mirror, emulator):
    make_mirror().fetch(["documents/www.tensorflow.org/hub/caching"])
    emulator.reset()
    emulator.inject(Fault("status", status=503), times=-1, path=ANSWER)
    result = make_mirror().answer_query("Where are compressed models cached?")
    assert result.source == "extractive"
    assert "upstream failed" in result.warnings[0] and "local store" in result.warnings[0]


def test_a_wrong_key_is_still_an_error_for_answers(make_mirror, emulator):
    from mirror.errors import AuthError

    with pytest.raises(AuthError):
        make_mirror(api_key="wrong-key").answer_query("What is TensorFlow Hub?")
