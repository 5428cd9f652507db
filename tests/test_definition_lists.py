"""Definition lists (a term on its line, then `: its definition`; 160 of them on 25 pages of
the corpus) read as prose: snippets set the term off as they set off a heading, answers quote
the definition without its term, and neither shows the `:` marker ("Top Level domain match
patterns : Chrome doesn't support ...")."""

from __future__ import annotations

import re

from mirror.models import Document
from mirror.search import quotes
from mirror.search.snippets import plain_text

from .cli_store import put_documents

# developer.chrome.com/docs/extensions/mv3/match_patterns (abridged).
PAGE = (
    "# Match patterns\n\n"
    "## Special cases {: #special }\n\n"
    '`"file:///"`\n'
    ": Allows your extension to run on local files. This pattern requires the user to manually "
    "[grant access][permissions]. Note that this case requires three slashes, not two.\n\n"
    "Top Level domain match patterns\n"
    ": Chrome doesn't support match patterns for [top Level domains (TLD)][mdn-tld]. Specify "
    "your match patterns within individual TLDs, as in `http://google.es/*` and "
    "`http://google.fr/*`.\n\n"
    "[permissions]: /docs/extensions/mv3/declare_permissions\n"
    "[mdn-tld]: https://developer.mozilla.org/docs/Glossary/TLD\n"
)


def test_a_definition_reads_after_its_term_without_the_marker() -> None:
    text = plain_text("Top Level domain match patterns\n: Chrome doesn't support TLD patterns.")
    assert text == "Top Level domain match patterns — Chrome doesn't support TLD patterns."
    # A colon inside a line, or a `{: #id}` attribute list, is not one.
    assert plain_text("Note\nthe ratio 1 : 2 holds.") == "Note the ratio 1 : 2 holds."


def test_an_answer_quotes_the_definition_not_its_term() -> None:
    quote = quotes.best([PAGE], "does chrome support match patterns for top level domains")
    assert quote is not None
    assert quote.text.startswith("Chrome doesn't support match patterns for top Level domains")


def test_search_and_answer_show_definitions_as_prose(cli_offline, db_url) -> None:  # type: ignore[no-untyped-def]
    put_documents(
        db_url,
        [
            Document(
                name="documents/developer.chrome.com/docs/extensions/mv3/match_patterns",
                title="Match patterns",
                content=PAGE,
                data_source="developer.chrome.com",
            )
        ],
    )
    searched = cli_offline("search", "match patterns for top level domains")
    assert searched.exit_code == 0, searched.output
    assert "**patterns** — Chrome doesn't support" in searched.stdout, searched.stdout
    answered = cli_offline("answer", "does chrome support match patterns for top level domains")
    assert answered.exit_code == 0, answered.output
    lead = answered.stdout.splitlines()[1]
    assert lead.startswith("Chrome doesn't support match patterns"), answered.stdout
    for output in (searched.stdout, answered.stdout):
        assert " : " not in output and "\n: " not in output


# developer.chrome.com/docs/extensions/mv3/declare_permissions (abridged): terms that are links
# and code, each followed by its definition, then an ordinary paragraph.
PERMISSIONS_PAGE = (
    "# Declare permissions\n\n"
    "Extensions can request the following categories of permissions, specified using the "
    "respective manifest keys:\n\n"
    '[`"permissions"`](#permissions)\n'
    ": Contains items from a list of [known strings](#permissions). Changes may trigger a "
    "[warning](#warnings).\n\n"
    '[`"optional_permissions"`][api-perms]\n'
    ": Granted by the user at runtime, instead of at install time.\n\n"
    '`"optional_host_permissions"`\n'
    ": Granted by the user at runtime, instead of at install time.\n\n"
    "Permissions help to limit damage if your extension is compromised by malware.\n\n"
    "[api-perms]: /docs/extensions/reference/permissions\n"
)


def test_the_browser_shows_a_definition_list_as_one(db_url: str) -> None:
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from mirror.config import Settings
    from mirror.serve.web.routes import WebOptions, web_routes
    from mirror.service import Mirror

    name = "documents/developer.chrome.com/docs/extensions/mv3/declare_permissions"
    put_documents(
        db_url,
        [
            Document(
                name=name,
                title="Declare permissions",
                content=PERMISSIONS_PAGE,
                data_source="developer.chrome.com",
            )
        ],
    )
    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        client = TestClient(Starlette(routes=web_routes(mirror, WebOptions())))
        page = client.get(f"/doc/{name[len('documents/') :]}").text
    article = page[page.index("Extensions can request") :]
    assert article.count("<dl>") == 1, article  # one list of three terms, not three lists
    assert article.count("<dt>") == 3 and article.count("<dd>") == 3, article
    assert '<dt><a href="#permissions"><code>"permissions"</code></a></dt>' in article
    # The term's link (a reference link) and the definition's own links are kept.
    assert re.search(r'<dt><a [^>]*><code>"optional_permissions"</code></a>.*</dt>', article)
    assert '<dd>Contains items from a list of <a href="#permissions">known strings</a>' in article
    assert "<dd>Granted by the user at runtime, instead of at install time.</dd>" in article
    # Nothing of the source syntax shows, and the paragraph after the list stays one.
    assert "\n: " not in article and "</code></a>\n:" not in article
    assert "<p>Permissions help to limit damage" in article
