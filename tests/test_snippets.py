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
    assert "".join(s for s, _ in segments).startswith("Lifecycle Read the service worker lifecycle")


def test_window_centres_on_the_densest_run_of_matches():
    text = "filler " * 100 + "keras model keras model" + " filler" * 100
    segments = best_window(text, "keras model", width=80)
    joined = "".join(s for s, _ in segments)
    assert joined.startswith("…") and joined.endswith("…")
    assert sum(1 for _, is_match in segments if is_match) == 4
