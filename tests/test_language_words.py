"""The words of other-language queries: Korean particles stripped, Japanese cut at its kana,
the function words of Spanish, Portuguese, German and French dropped where the pages of the
query's language rank first; and what each changes in a ranking on a real store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.models import Document
from mirror.search.cjk_words import japanese_pieces, korean_stem, query_words
from mirror.search.language import without_function_words
from mirror.service import ranking
from mirror.service.context import Context
from mirror.store.store import Store
from mirror.upstream.interface import Upstream

SOURCE = "developer.chrome.com"


def _doc(path: str, title: str, content: str) -> Document:
    return Document(
        name=f"documents/{SOURCE}/{path}",
        uri=f"https://{SOURCE}/{path}",
        content=f"# {title}\n\n{content}\n",
        data_source=SOURCE,
        title=title,
    )


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("광고를", "광고"),  # object particle
        ("앱에서", "앱"),  # "in": one syllable stays
        ("실패합니다", "실패"),  # a verb ending
        ("사용자가", "사용자"),
        ("서로", "서로"),  # two syllables: "로" is part of the word ("each other")
        ("추가", "추가"),  # "가" likewise ("add")
        ("방법", "방법"),
        ("하기", "하기"),  # nothing would be left
    ],
)
def test_a_korean_word_loses_its_particle_or_ending(word: str, stem: str) -> None:
    assert korean_stem(word) == stem


def test_a_japanese_token_is_cut_at_its_hiragana_and_keeps_its_words() -> None:
    assert japanese_pieces("サイトのクッキーを削除する") == ["サイト", "クッキー", "削除"]
    # A lone kanji before okurigana (使え) is dropped while longer pieces remain.
    assert japanese_pieces("クッキーが使えなくなる前に準備") == ["クッキー", "準備"]
    assert japanese_pieces("2024年にクロスサイトの") == ["2024年", "クロスサイト"]
    assert japanese_pieces("ください") == ["ください"]  # all hiragana: nothing else to go by


def test_query_words_leave_other_tokens_as_typed() -> None:
    assert query_words("chrome.storage") == ["chrome.storage"]
    assert query_words("缓存网络请求") == ["缓存网络请求"]  # Chinese: no cut without a dictionary
    assert query_words("광고를?") == ["광고?"]  # punctuation stays for the tokenizer


@pytest.mark.parametrize(
    ("token", "words"),
    [
        ("Lighthouse에서", ["Lighthouse"]),  # "in" after a product name
        ("API를", ["API"]),  # object particle after an acronym
        ("Chrome의", ["Chrome"]),  # possessive: one syllable, still a particle here
        ("DevTools에서는", ["DevTools"]),
        ("HTTP2", ["HTTP2"]),
        ("Chrome브라우저", ["Chrome브라우저"]),  # a word, not a particle: left to the bigrams
    ],
)
def test_a_particle_written_after_a_latin_word_is_dropped(token: str, words: list[str]) -> None:
    assert query_words(token) == words


def test_the_function_words_of_the_query_s_language_are_dropped() -> None:
    assert (
        without_function_words("¿Cómo detectar el usuario inactivo en la pantalla?", "es")
        == "detectar usuario inactivo pantalla?"
    )
    assert (
        without_function_words("mostrar um número de notificações não lidas no ícone", "pt")
        == "mostrar número notificações lidas ícone"
    )
    assert (
        without_function_words("как зарегистрировать сервис-воркер для офлайн-работы", "ru")
        == "зарегистрировать сервис-воркер офлайн-работы"
    )
    assert without_function_words("de la", "es") == "de la"  # nothing else: kept
    assert without_function_words("die Sandbox", "ja") == "die Sandbox"  # no list


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    yield opened
    opened.close()


def _ranked(store: Store, docs: list[Document], query: str) -> list[str]:
    store.put(docs, fetched_at=0.0, upstream="test")
    return [h.name.rsplit("/", 1)[-1] for h in store.rank_documents(query, limit=5)]


def test_a_korean_question_finds_the_page_with_its_words_in_other_forms(store: Store) -> None:
    """The page holds the question's words with other particles ("쿠키는", "사이트마다",
    "삭제할"); a page sharing only the particles' bigrams ("트의", "키를", "하는") ranked
    first when each word was searched with its particle."""
    docs = [
        _doc(
            "cookies",
            "쿠키 관리",
            "쿠키는 사이트마다 저장되며 언제든 삭제할 수 있습니다. 오래된 쿠키는 삭제됩니다.",
        ),
        _doc("keys", "리스트", "리스트의 키를 제하는 방법. 리스트의 키를 제하는 방법입니다."),
    ]
    assert _ranked(store, docs, "사이트의 쿠키를 삭제하는 방법")[0] == "cookies"


def test_a_japanese_question_finds_the_page_with_its_words_apart(store: Store) -> None:
    """The page holds the question's words (サイト, クッキー, 削除) in other sentences; a
    page sharing the bigrams across its particles ("トの", "のク", "を削") ranked first while
    the question was one run of bigrams."""
    docs = [
        _doc("cookies", "保存", "クッキーはサイトごとに保存され、期限が来ると削除されます。"),
        _doc(
            "lists",
            "リスト",
            "リストのクラスを削除する。リストのクラスを削除する。リストのクラスを削除する。",
        ),
    ]
    assert _ranked(store, docs, "サイトのクッキーを削除する")[0] == "cookies"


def test_a_spanish_question_ranks_by_its_words_not_its_articles(store: Store) -> None:
    """A page that repeats "el", "de", "la" and holds one of the question's words ranked
    above the page holding two of them while those counted as terms (they match no English
    page: rare in the index, as in a store of mostly English pages). The ranking with the
    pages of the query's language first (hybrid_ranking, vectors on or off) drops them."""
    docs = [
        _doc("idle", "Inactividad", "Detectar la inactividad del teclado y de la pantalla."),
        _doc(
            "misc",
            "Notas",
            "El usuario de la red, de la caché y de la memoria: el resto de la página es de "
            "la aplicación y el usuario de la misma.",
        ),
        *(
            _doc(f"en{i}", f"English {i}", "Caching network requests in a service worker.")
            for i in range(5)
        ),
    ]
    store.put(docs, fetched_at=0.0, upstream="test")
    ctx = Context(Settings(db_url=str(store.engine.url), offline=True), store, _offline, time.time)
    ranked = ranking.hybrid_ranking(ctx, "detectar cuándo el usuario deja el teclado", limit=5)
    assert ranked is not None
    assert ranked[0].name.endswith("/idle")


def _offline() -> Upstream:
    raise AssertionError("a local ranking never asks upstream")
