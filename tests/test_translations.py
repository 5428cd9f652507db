"""Translated pages in a ranking (mirror.search.translations): pure rules, table-driven."""

from __future__ import annotations

import pytest

from mirror.search.translations import original_of, untranslated_first

HOST = "documents/developer.chrome.com"


@pytest.mark.parametrize(
    ("name", "original"),
    [
        (f"{HOST}/es/articles/hid", f"{HOST}/articles/hid"),
        (f"{HOST}/pt-br/blog/x", f"{HOST}/blog/x"),
        (f"{HOST}/zh_TW/docs/a/b", f"{HOST}/docs/a/b"),
        (f"{HOST}/articles/hid", None),  # "articles" is no language code
        (f"{HOST}/es", None),  # a locale's home page has no original path
        ("documents/www.tensorflow.org/js/guide", None),  # TensorFlow.js, not a language
        (f"{HOST}/xx/articles/hid", None),
    ],
)
def test_original_of(name: str, original: str | None) -> None:
    assert original_of(name) == original


def test_a_translation_goes_below_untranslated_pages_that_hold_as_many_terms() -> None:
    es_a, x, de_b, a, y = (f"{HOST}/{p}" for p in ("es/a", "x", "de/b", "a", "y"))
    held = {es_a: 2, x: 1, de_b: 2, a: 2, y: 3}
    # es/a holds more than x: it stays ahead. de/b holds no more than a and y: below both.
    assert untranslated_first([es_a, x, de_b, a, y], str, held) == [es_a, x, a, y, de_b]
    # A translation that holds more terms than every other page keeps its place.
    assert untranslated_first([es_a, x], str, {es_a: 3, x: 2}) == [es_a, x]
    assert untranslated_first([x, a], str, {}) == [x, a]
