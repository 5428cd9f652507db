"""Extractive answers (pure): quoted sentences, each document cited once."""

from __future__ import annotations

from mirror.search.extractive import Passage, build

A = "documents/developer.chrome.com/docs/extensions/service-workers"
B = "documents/web.dev/articles/service-worker-lifecycle"


def test_two_passages_of_one_document_give_one_citation():
    passages = [
        Passage(A, "A service worker handles extension events in the background.", None),
        Passage(A, "The service worker starts when an event it listens for fires.", None),
        Passage(B, "Each service worker goes through install and activate events.", None),
    ]
    answer = build("service worker events", passages)
    assert [r.parent for r in answer.references] == [A, B]
    assert [c.reference_indexes for c in answer.citations] == [(0,), (1,)]
    assert answer.answer_text.count("[1]") == 1 and answer.answer_text.count("[2]") == 1


def test_a_document_is_quoted_from_its_best_passage():
    passages = [
        Passage(A, "Nothing relevant is said in this opening paragraph here.", None),
        Passage(A, "Service worker events wake the extension when needed.", None),
    ]
    answer = build("service worker events", passages)
    assert len(answer.references) == 1
    assert "wake the extension" in answer.answer_text
