"""An extractive answer does not lead with a sentence that introduces what it cannot quote:
"To check a file with `pylint` from the TensorFlow source code root directory:" is followed
by the command, which an answer (prose only) leaves out, so quoted alone it ends hanging.
Another sentence holding the question's words leads instead; a page none of whose other
sentences does still gives its colon sentence."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.models import Document
from mirror.search import quotes
from tests.cli_store import stored_for_cli
from tests.emulator_fixtures import corpus_documents

CODE_STYLE = "documents/www.tensorflow.org/community/contribute/code_style"


@pytest.fixture
def tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = [Document.from_api(r) for r in corpus_documents("tensorflow.org")]
    return stored_for_cli(tmp_path, monkeypatch, docs)


def test_an_answer_does_not_lead_with_a_sentence_ending_in_a_colon(tensorflow: Path) -> None:
    answered = CliRunner().invoke(cli, ["answer", "--offline", "how do I check a file with pylint"])
    assert answered.exit_code == 0, answered.output
    lead = answered.stdout.splitlines()[1]
    assert f"[1] {CODE_STYLE}" in answered.stdout, answered.stdout
    assert "pylint" in lead and not lead.removesuffix(" [1]").endswith(":"), lead


def test_a_colon_sentence_is_quoted_when_no_other_holds_the_words() -> None:
    page = "Some words about nothing in particular here.\n\nTo lint a file, run this:\n\n```\nlint x\n```\n"
    found = quotes.best([page], "how do I lint a file")
    assert found is not None and found.text == "To lint a file, run this:" and found.score > 0
    # With no question word anywhere: the first sentence that does not end in a colon.
    opening = quotes.best(
        ["Run the following command in a terminal:\n\nIt prints the version of the tool.\n"],
        "zebra",
    )
    assert opening is not None and opening.text == "It prints the version of the tool."
