"""Snippets read as prose: Markdown syntax and link targets never carry the marks."""

from __future__ import annotations

from mirror.search.snippets import best_window, plain_text


def test_link_targets_and_markup_are_dropped_before_marking():
    markdown = (
        "## Lifecycle\n\nRead the [service worker lifecycle](/docs/sw/service-worker-lifecycle/) "
        "guide. {% Aside %}**Note**: `chrome.alarms` keeps a service worker alive.{% endAside %}"
    )
    text = plain_text(markdown)
    assert "](" not in text and "{%" not in text and "##" not in text and "**" not in text
    segments = best_window(text, "service worker lifecycle")
    marked = [s for s, is_match in segments if is_match]
    assert marked and {m.lower() for m in marked} <= {"service", "worker", "lifecycle"}
    assert all("/" not in s for s, is_match in segments if is_match)
    assert "".join(s for s, _ in segments).startswith(
        "Lifecycle — Read the service worker lifecycle"
    )


def test_fences_lose_their_info_strings_and_headings_stand_apart():
    markdown = (
        "## Install\n\nRun this:\n\n```sh {: .devsite-terminal }\npip install tensorflow\n```\n\n"
        "### Check it ###\nImport it."
    )
    text = plain_text(markdown)
    assert text == "Install — Run this: pip install tensorflow Check it — Import it."
    assert "sh" not in text.split() and "devsite" not in text


def test_stemmed_words_are_marked():
    segments = best_window("Sea otters float. An otter eats.", "otter floating")
    assert [s for s, is_match in segments if is_match] == ["otters", "float", "otter"]


def test_window_centres_on_the_densest_run_of_matches():
    text = "filler " * 100 + "keras model keras model" + " filler" * 100
    segments = best_window(text, "keras model", width=80)
    joined = "".join(s for s, _ in segments)
    assert joined.startswith("…") and joined.endswith("…")
    assert sum(1 for _, is_match in segments if is_match) == 4


def test_stop_words_of_the_query_are_not_marked():
    segments = best_window("Move the data from the cache to the network.", "how to move from cache")
    marked = {s for s, m in segments if m}
    assert marked == {"Move", "cache"}
    # A query of stop words only still marks them (there is nothing else to show).
    assert {s for s, m in best_window("To be or not to be.", "to be") if m} == {"To", "be", "to"}


def test_plain_text_drops_html_tags_and_decodes_entities():
    assert plain_text('Trace once.<br/><div style="font-style: italic;">Note&nbsp;this.</div>') == (
        "Trace once. Note this."
    )
