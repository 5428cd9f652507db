"""Extractive answers (pure): quoted sentences, each document cited once."""

from __future__ import annotations

from mirror.models import Document
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


def test_a_quotation_carries_no_html_or_markdown_residue():
    """A TensorFlow page's `<br/><div style=...>` once reached the answer text verbatim."""
    text = (
        'Wrap the training step in tf.function to trace it once.<br/><div style="font-style: '
        'italic; margin-left: 1em">Tracing **runs** the [Python code](/guide/python) once.</div>'
    )
    answer = build("trace the training step with tf.function", [Passage(A, text, None)])
    quoted = answer.answer_text.split("\n", 1)[1]
    assert "tf.function" in quoted
    assert not any(residue in quoted for residue in ("<", ">", "style=", "**", "](", "&nbsp;"))


def test_the_answer_leads_with_the_first_ranked_page_even_when_another_matches_better():
    passages = [
        Passage(A, "Extension service workers wake for events and stop when idle.", None),
        Passage(B, "Service worker events: install, activate and fetch events in order.", None),
    ]
    answer = build("service worker install activate fetch events", passages)
    assert answer.reference_names == [A, B]
    assert answer.answer_text.split("\n")[1].startswith("Extension service workers wake")


def test_a_page_sharing_only_stop_words_gives_no_supporting_quote():
    passages = [
        Passage(A, "Cache pages from the network with a network-first strategy.", None),
        Passage(B, "How to get from here to there is up to the reader of this text.", None),
    ]
    answer = build("how to cache pages from the network", passages)
    assert answer.reference_names == [A]
    assert "reader" not in answer.answer_text


def test_a_lead_page_without_a_question_word_is_quoted_from_its_opening():
    """Search ranked it first (by meaning, or by its title): its opening says what it is."""
    passages = [
        Passage(
            A,
            "# Lifecycle\n\nExtension service workers start on events. Then they stop when idle.",
            None,
        ),
        Passage(B, "Nothing about it here at all, truly nothing whatsoever.", None),
    ]
    answer = build("when does chrome terminate background code", passages)
    assert answer.reference_names == [A]
    assert answer.answer_text.split("\n")[1] == (
        "Extension service workers start on events. Then they stop when idle. [1]"
    )


def test_a_lead_page_without_prose_is_quoted_from_its_description():
    """developer.chrome.com/docs/devtools: a title and a list of links, and a description."""
    about = "Chrome DevTools is a set of web developer tools built directly into Chrome."
    landing = Document(A, content="# Chrome DevTools\n\n- [Overview](/overview)", description=about)
    passages = [
        Passage(A, landing.content or "", landing),
        Passage(B, "Open DevTools with Control+Shift+I to inspect the page's tools.", None),
    ]
    answer = build("devtools tools", passages)
    assert answer.reference_names == [A, B]
    assert answer.answer_text.split("\n")[1] == about + " [1]"
    assert answer.references[0].content == about


def test_a_page_saying_what_an_earlier_quote_said_is_cited_there_not_quoted_again():
    # developer.chrome.com/docs/extensions/mv3/manifest/activeTab and its mv2 twin: "what
    # does the activeTab permission allow" quoted the same sentence twice, as [1] and [2].
    mv3 = "documents/developer.chrome.com/docs/extensions/mv3/manifest/activeTab"
    mv2 = "documents/developer.chrome.com/docs/extensions/mv2/manifest/activeTab"
    other = "documents/developer.chrome.com/docs/extensions/mv3/declare_permissions"
    passages = [
        Passage(
            mv3,
            "Get the URL, title, and favicon for that tab via an API that returns a tabs.Tab "
            'object (essentially, "activeTab" grants host permission temporarily).',
            None,
        ),
        Passage(
            mv2,
            "Get the URL, title, and favicon for that tab via an API that returns a tabs.Tab "
            "object (essentially, activeTab grants the tabs permission temporarily).",
            None,
        ),
        Passage(
            other,
            "The activeTab permission grants temporary access to the site the user is on.",
            None,
        ),
    ]
    answer = build("what does the activeTab permission allow", passages)
    # Nearly the same words, not the same statement: mv2's is not quoted, nor cited for mv3's.
    assert answer.reference_names == [mv3, other]
    assert answer.answer_text.count("Get the URL") == 1
    assert [c.reference_indexes for c in answer.citations] == [(0,), (1,)]
    lines = answer.answer_text.splitlines()
    assert lines[1].endswith("temporarily). [1]") and lines[2].endswith("user is on. [2]")
    for citation in answer.citations:  # the offsets still hold the quotes
        quoted = answer.answer_text.encode()[citation.start_index : citation.end_index].decode()
        assert any(line.startswith(quoted + " [") for line in lines)
    # A quote holding an earlier one, and going on, says it too: that page is another source
    # of it (mv3 and apps manifest/icons, for "what icon sizes should a Chrome App manifest
    # declare?").
    icons = "You may provide icons of any other size you wish, and Chrome will attempt to use "
    longer = icons + "the best size. For example, Windows often requires 32-pixel icons."
    shown = build(
        "which icon sizes",
        [Passage(mv3, icons + "the best size.", None), Passage(mv2, longer, None)],
    )
    assert [c.reference_indexes for c in shown.citations] == [(0, 1)]
    # Two pages that say different things about the same words are both quoted.
    passages[1] = Passage(mv2, "The activeTab permission is granted when the user clicks.", None)
    assert build("what does the activeTab permission allow", passages).reference_names == [
        mv3,
        mv2,
        other,
    ]
