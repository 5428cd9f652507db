"""The typed symbol index: what reference pages define (mirror/symbols/), kept in step with
the stored pages on both backends, read by the Store and the cold-path Reader alike, and an
exact symbol first in local search."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.store.reader import Reader
from mirror.store.schema.tables import SCHEMA_REVISION
from mirror.store.store import Store
from mirror.symbols.extract import extract

pytestmark = pytest.mark.both_backends

CORPUS = Path(__file__).parent / "data" / "corpus" / "developer.chrome.com-en.jsonl.gz"
REF = "documents/developer.chrome.com/docs/extensions/reference/"

# The layout the reference pages generated from the API's IDL have: one H2 per kind of member,
# one H3 per member (the corpus' pages are the hand-written part only).
ALARMS = """# chrome.alarms

## Overview

Schedule code to run.

```md
## Methods
### notAMethod
```

## Types

### Alarm {: #type-Alarm }

## Methods

### `create()`

```js
chrome.alarms.create(name?: string, alarmInfo: AlarmCreateInfo)
```

### clearAll

## Events

### onAlarm

## See also

### unrelated
"""


def _page(name: str) -> Document:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        for line in lines:
            doc = Document.from_api(json.loads(line))
            if doc.name == name:
                return doc
    raise AssertionError(f"{name} is not in {CORPUS}")


def _typed(symbols) -> set[tuple[str, str, str | None]]:  # type: ignore[no-untyped-def]
    return {(s.name, s.type, s.anchor) for s in symbols}


def test_generated_reference_sections_give_typed_members_with_their_anchors() -> None:
    found = extract(REF + "alarms", ALARMS)
    assert _typed(found) == {
        ("chrome.alarms", "Namespace", None),
        ("chrome.alarms.Alarm", "Type", "type-Alarm"),
        ("chrome.alarms.create", "Method", "method-create"),
        ("chrome.alarms.clearAll", "Method", "method-clearAll"),
        ("chrome.alarms.onAlarm", "Event", "event-onAlarm"),
    }
    assert {s.parent for s in found} == {None, "chrome.alarms"}
    assert {s.document for s in found} == {REF + "alarms"}


def test_code_on_a_reference_page_types_its_members_by_use() -> None:
    code = (
        "# storage\n\n```js\nchrome.storage.local.get(['k']).then(show);\n"
        "chrome.storage.onChanged.addListener((changes) => {});\n"
        "new chrome.storage.StorageArea();\nchrome.storage.MAX_ITEMS;\n```\n"
        "Prose names `chrome.storage.clear` without parentheses.\n"
    )
    assert _typed(extract(REF + "storage", code)) == {
        ("chrome.storage", "Namespace", None),
        ("chrome.storage.local", "Property", None),
        ("chrome.storage.local.get", "Method", None),
        ("chrome.storage.onChanged", "Event", None),
        ("chrome.storage.StorageArea", "Type", None),
        ("chrome.storage.MAX_ITEMS", "Property", None),
    }
    # Of the namespace chrome.storage, however deep: "a method of chrome.storage".
    got = {s.name: s.parent for s in extract(REF + "storage", code)}
    assert got["chrome.storage.local.get"] == "chrome.storage"
    # Sub-namespaces come from the page's path: devtools_panels is chrome.devtools.panels.
    panels = extract(REF + "devtools_panels", "chrome.devtools.panels.create('x')")
    assert _typed(panels) == {
        ("chrome.devtools.panels", "Namespace", None),
        ("chrome.devtools.panels.create", "Method", None),
    }
    assert {s.parent for s in panels} == {"chrome.devtools", "chrome.devtools.panels"}


def test_links_to_typed_anchors_name_members_of_the_linked_page() -> None:
    guide = (
        "See [lastError][le] and [the event](https://developer.chrome.com/docs/extensions/"
        "reference/api/tabs#event-onUpdated).\n\n[le]: /docs/extensions/reference/runtime/"
        "#property-lastError\n\nCalling `chrome.tabs.query()` here defines nothing.\n"
    )
    found = extract("documents/developer.chrome.com/docs/extensions/mv3/guide", guide)
    assert _typed(found) == {
        ("chrome.runtime.lastError", "Property", "property-lastError"),
        ("chrome.tabs.onUpdated", "Event", "event-onUpdated"),
    }
    assert {s.document for s in found} == {REF + "runtime", REF + "api/tabs"}


def test_python_api_pages_give_classes_functions_modules_and_methods() -> None:
    base = "documents/www.tensorflow.org/api_docs/python/tf/"
    dense = (
        "# tf.keras.layers.Dense\n\nJust your regular layer.\n\n## Methods\n\n"
        '<h3 id="add_loss"><code>add_loss</code></h3>\n\n### `call`\n\n## Attributes\n\n### not\n'
    )
    assert _typed(extract(base + "keras/layers/Dense", dense)) == {
        ("tf.keras.layers.Dense", "Class", None),
        ("tf.keras.layers.Dense.add_loss", "Method", "add_loss"),
        ("tf.keras.layers.Dense.call", "Method", "call"),
    }
    module = "# `tf.keras.layers`\n\n## Classes\n\n[`class Dense`](./layers/Dense.md)\n"
    assert _typed(extract(base + "keras/layers", module)) == {("tf.keras.layers", "Module", None)}
    function = "# tf.concat\n\n```python\ntf.concat(values, axis)\n```\n"
    assert _typed(extract(base + "concat", function)) == {("tf.concat", "Function", None)}
    # The same title on a guide page is no API page.
    assert extract("documents/www.tensorflow.org/guide/keras", dense) == []


def test_written_pages_keep_their_symbols_in_step(db_url: str) -> None:
    tts = _page(REF + "tts")
    store = Store.open(db_url)
    try:
        store.put([tts], fetched_at=1.0, upstream="t")
        speak = store.symbol_exact("chrome.tts.speak")
        assert speak is not None and (speak.type, speak.document) == ("Method", tts.name)
        assert store.symbol_exact("CHROME.TTS.SPEAK") == speak  # case folded
        # A new version without the call: its symbol goes in the same write.
        content = (tts.content or "").replace("chrome.tts.speak", "chrome.tts.talk")
        store.put([Document(tts.name, content=content)], fetched_at=2.0, upstream="t")
        assert store.symbol_exact("chrome.tts.speak") is None
        assert store.symbol_exact("chrome.tts.talk") is not None
        # A deleted page takes its symbols with it.
        store.apply_stream([tts.name], fetched_at=3.0, upstream="t")
        assert store.symbol_list() == []
    finally:
        store.close()


def test_lookup_ranks_exact_then_in_order_and_finds_last_parts(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        store.put(
            [_page(REF + "tts"), _page(REF + "ttsEngine"), _page(REF + "readingList")],
            fetched_at=1.0,
            upstream="t",
        )
        # The exact name first, then the names starting with it in order (its members).
        assert [s.name for s in store.symbol_lookup("chrome.tts", 4)] == [
            "chrome.tts",
            "chrome.tts.getVoices",
            "chrome.tts.speak",
            "chrome.tts.stop",
        ]
        assert [s.name for s in store.symbol_lookup("chrome.tts", 9)][4:] == [
            "chrome.ttsEngine",
            "chrome.ttsEngine.onSpeak",
            "chrome.ttsEngine.onStop",
        ]
        # Not a prefix of any name: the last parts match (`query` of chrome.readingList).
        assert [s.name for s in store.symbol_lookup("Quer", 5)] == ["chrome.readingList.query"]
        # Linked from ttsEngine with an anchor, but shown as its own page has it, once.
        speak = store.symbol_lookup("chrome.tts.speak", 5)
        assert [(s.name, s.document) for s in speak] == [("chrome.tts.speak", REF + "tts")]
        assert store.symbol_lookup("nothing.like.this", 5) == []
        if db_url.startswith("sqlite"):
            # The cold-path Reader answers the same from plain sqlite3.
            reader = Reader.open(db_url)
            try:
                assert reader.symbol_lookup("chrome.tts", 4) == store.symbol_lookup("chrome.tts", 4)
                assert reader.symbol_exact("chrome.tts.speak") == speak[0]
                assert reader.symbol_list() == store.symbol_list()
            finally:
                reader.close()
    finally:
        store.close()


def test_a_linked_symbol_shows_once_its_page_is_stored(db_url: str) -> None:
    guide = Document(
        "documents/developer.chrome.com/docs/extensions/mv3/guide",
        content="[x]: /docs/extensions/reference/runtime/#property-lastError\n",
    )
    store = Store.open(db_url)
    try:
        store.put([guide], fetched_at=1.0, upstream="t")
        assert store.symbol_exact("chrome.runtime.lastError") is None  # runtime not mirrored
        store.put([Document(REF + "runtime", content="# runtime\n")], fetched_at=1.0, upstream="t")
        found = store.symbol_exact("chrome.runtime.lastError")
        assert found is not None
        assert (found.type, found.document, found.anchor) == (
            "Property",
            REF + "runtime",
            "property-lastError",
        )
        assert [s.name for s in store.symbol_list()] == [
            "chrome.runtime",
            "chrome.runtime.lastError",
        ]
        assert store.rebuild_symbols() == 2
        assert [s.name for s in store.symbol_list()] == [
            "chrome.runtime",
            "chrome.runtime.lastError",
        ]
    finally:
        store.close()


def test_search_puts_the_page_of_an_exact_symbol_first(make_mirror) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import open_store, seed

    mirror = make_mirror(offline=True)
    guide = _page("documents/developer.chrome.com/docs/extensions/mv3/user_interface")
    seed(mirror, [guide, _page(REF + "action")], fetched_at=1.0)
    # The guide names chrome.action.setPopup more often than the reference page does, so the
    # words alone rank it first; the symbol index knows whose method it is.
    store = open_store(mirror)
    try:
        assert store.rank_documents("chrome.action.setPopup", limit=2)[0].name == guide.name
    finally:
        store.close()
    for query in ("chrome.action.setPopup", "chrome.action.setPopup()", "CHROME.ACTION.SETPOPUP"):
        result = mirror.search_documents(query, page_size=5)
        assert result.page.results[0].parent == REF + "action", query
    # A filter the page fails keeps it out, first or not.
    filtered = mirror.search_documents(
        "chrome.action.setPopup", page_size=5, filter=f'uri = "{guide.uri}"'
    )
    assert {r.parent for r in filtered.page.results} == {guide.name}
    # Prose is searched as before.
    words = mirror.search_documents("popup action toolbar", page_size=5)
    assert {r.parent for r in words.page.results} <= {guide.name, REF + "action"}


@pytest.mark.sqlite_only
def test_migration_fills_the_index_from_stored_pages(tmp_path: Path) -> None:
    from mirror.store.db import engine as engines
    from mirror.store.db.migrate import upgrade
    from tests.test_migrations import insert_old_documents

    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    old = Store(engines.create(url))
    upgrade(old.engine, "0013")
    with old.engine.begin() as conn:
        insert_old_documents(
            conn,
            [{"name": REF + "alarms", "title": "alarms", "content": ALARMS, "fetched_at": 0.0,
              "upstream": "t"}],
        )  # fmt: skip
    old.close()
    store = Store.open(url)
    try:
        assert store.revision() == SCHEMA_REVISION  # 0015 (symbols) and whatever came after
        assert _typed(store.symbol_list()) == _typed(extract(REF + "alarms", ALARMS))
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_cli_lists_symbols_by_prefix_and_counts_them(db_url: str) -> None:
    from click.testing import CliRunner

    from mirror.cli.main import cli

    store = Store.open(db_url)
    store.put([_page(REF + "tts"), _page(REF + "readingList")], fetched_at=1.0, upstream="t")
    store.close()
    run = CliRunner().invoke
    listed = run(cli, ["symbols", "chrome.tts.s", "--json", "--db", db_url])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [(r["name"], r["type"]) for r in rows] == [
        ("chrome.tts.speak", "Method"),
        ("chrome.tts.stop", "Method"),
    ]
    counts = run(cli, ["symbols", "--counts", "--json", "--db", db_url])
    assert json.loads(counts.output) == {"total": 9, "byType": {"Namespace": 2, "Method": 7}}
    missing = run(cli, ["symbols", "nothing.here", "--db", db_url])
    assert missing.exit_code == 0 and "no symbols starting with nothing.here" in missing.output


@pytest.mark.sqlite_only
def test_index_rebuild_reads_every_pages_symbols_again(db_url: str) -> None:
    from click.testing import CliRunner
    from sqlalchemy import text

    from mirror.cli.main import cli

    store = Store.open(db_url)
    store.put([_page(REF + "tts")], fetched_at=1.0, upstream="t")
    before = store.symbol_list()
    with store.engine.begin() as conn:  # as a store written by older extraction rules
        conn.execute(text("DELETE FROM symbols"))
    assert store.symbol_list() == []
    store.close()
    rebuilt = CliRunner().invoke(cli, ["index", "rebuild", "--db", db_url])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert f"{len(before)} symbol entries" in rebuilt.output
    store = Store.open(db_url)
    try:
        assert store.symbol_list() == before
    finally:
        store.close()
