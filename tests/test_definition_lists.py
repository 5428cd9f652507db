"""Definition lists (a term on its line, then `: its definition`; 160 of them on 25 pages of
the corpus) read as prose: snippets set the term off as they set off a heading, answers quote
the definition without its term, and neither shows the `:` marker ("Top Level domain match
patterns : Chrome doesn't support ...")."""

from __future__ import annotations

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
