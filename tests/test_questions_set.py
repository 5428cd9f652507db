"""The held-out question set (bench/data/questions.json): big enough, every kind in both
halves, and the halves fixed by the query text alone (bench/data/questions.md)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.bench_questions import FILES, GROUPS, SET, load_questions, table
from mirror.records import read_documents

KINDS = {
    "question",
    "agent",
    "asked",
    "paraphrase",
    "other-language",
    "keyword",
    "identifier",
    "typo",
}


def test_the_set_has_every_kind_in_both_halves() -> None:
    questions = load_questions()
    assert len(questions) >= 150
    assert len({q.text for q in questions}) == len(questions)
    halves = Counter((q.kind, q.half) for q in questions)
    assert {kind for kind, _ in halves} == KINDS
    assert all(halves[kind, half] >= 2 for kind in KINDS for half in ("dev", "test"))
    assert {q.corpus for q in questions} == {"chrome", "tensorflow"}
    languages = Counter(
        q["language"] for q in json.loads(SET.read_text())["queries"] if "language" in q
    )
    assert set(languages) == {"ja", "ko", "zh", "es", "pt"}


def test_a_query_half_depends_on_its_text_only() -> None:
    for q in load_questions():
        odd = hashlib.sha256(q.text.encode("utf-8")).digest()[0] % 2
        assert q.half == ("test" if odd else "dev")


# Function words the title-word rule ignores (English, Spanish, Portuguese): a question may say
# "how" or "de" even when the title does; content words are what the rule is about.
FUNCTION_WORDS = frozenset(
    word
    for line in (
        "a an the to of in on for with from and or is are be by at as it its your you my our",
        "how what whats why when which new into do does not no can i we s t",
        "de la el en con para los las del por un una que qué hay o y su sus al lo",  # es
        "os da do em na dos das um uma se é e",  # pt
    )
    for word in line.split()
)
HAN_KANA = "\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff"


def _terms(text: str) -> set[str]:
    """Five-letter prefixes of a text's words, plus the character pairs of its katakana / Han
    runs (Japanese and Chinese have no spaces; hiragana particles are left out)."""
    lowered = text.lower()
    words = re.findall(r"\w+", re.sub(f"[{HAN_KANA}]", " ", lowered))
    prefixes = {word[:5] for word in words if word not in FUNCTION_WORDS}
    runs = re.findall(r"[\u30a0-\u30ff\u3400-\u9fff\uf900-\ufaff]+", lowered)
    return prefixes | {run[i : i + 2] for run in runs for i in range(len(run) - 1)}


@pytest.mark.parametrize("batch_number", [2, 3])
def test_drawn_batch_questions_avoid_their_target_title_words(batch_number: int) -> None:
    """questions.md step 2, checked mechanically for the entries that carry their drawn page's
    title (batches 2 and 3): no question, agent or other-language query shares a title word."""
    batch = [q for q in json.loads(SET.read_text())["queries"] if q.get("batch") == batch_number]
    assert len(batch) >= 60
    assert all(q["target_title"] for q in batch)
    offenders = {
        q["query"]: sorted(_terms(q["query"]) & _terms(q["target_title"]))
        for q in batch
        if q["kind"] in {"question", "agent", "other-language"}
    }
    assert {query: shared for query, shared in offenders.items() if shared} == {}


def test_third_batch_has_the_composition_questions_md_gives() -> None:
    """questions.md step 7: 60 queries, one per drawn page, in the stated kinds, corpora and
    languages, so the batch can be scored on its own (bench_questions --batch 3)."""
    batch = [q for q in json.loads(SET.read_text())["queries"] if q.get("batch") == 3]
    assert Counter(q["kind"] for q in batch) == {
        "agent": 24,
        "question": 20,
        "other-language": 10,
        "keyword": 2,
        "identifier": 2,
        "typo": 2,
    }
    targets = [q["expected"][0] for q in batch]
    assert len(set(targets)) == 60
    assert _sites(targets) == {"tensorflow": 20, "chrome-en": 30, "chrome-intl": 10}
    assert Counter(q["language"] for q in batch if "language" in q) == {
        lang: 2 for lang in ("ja", "ko", "zh", "es", "pt")
    }
    # A drawn page is one no earlier query expects (questions.md step 7).
    queries = json.loads(SET.read_text())["queries"]
    earlier = {e for q in queries if q.get("batch", 1) < 3 for e in q["expected"]}
    assert not earlier & set(targets)


def _sites(targets: list[str]) -> Counter[str]:
    """How many drawn pages each corpus gave: tensorflow, chrome in English, chrome in
    another language."""
    return Counter(
        "tensorflow"
        if t.startswith("www.tensorflow.org/")
        else "chrome-intl"
        if re.match(r"developer\.chrome\.com/[a-z]{2}/", t)
        else "chrome-en"
        for t in targets
    )


def test_fourth_batch_has_the_composition_questions_md_gives() -> None:
    """questions.md step 8: 40 `asked` queries, one per drawn page (15 tensorflow, 25 chrome
    en), each a 5-15 word question or request, drawn past the third batch's pages."""
    queries = json.loads(SET.read_text())["queries"]
    batch = [q for q in queries if q.get("batch") == 4]
    assert Counter(q["kind"] for q in batch) == {"asked": 40}
    assert all(q["target_title"] and 5 <= len(q["query"].split()) <= 15 for q in batch)
    assert not any("language" in q for q in batch)
    targets = [q["expected"][0] for q in batch]
    assert len(set(targets)) == 40
    assert _sites(targets) == {"tensorflow": 15, "chrome-en": 25}
    # A drawn page is one no earlier query expects, and none is a verbatim title.
    earlier = {e for q in queries if q.get("batch", 1) < 4 for e in q["expected"]}
    assert not earlier & set(targets)
    assert all(q["query"].lower() != q["target_title"].lower() for q in batch)


def test_asked_is_the_only_drawn_kind_free_of_the_title_word_rule() -> None:
    """The `asked` kind may use its page's title words (questions.md step 8), so the rule's
    test skips it; it is the only kind of batch 4, and no earlier batch uses it."""
    queries = json.loads(SET.read_text())["queries"]
    asked = [q for q in queries if q["kind"] == "asked"]
    assert asked and all(q.get("batch") == 4 for q in asked)
    # Real users do use title words: most asked queries share at least one.
    batch = [q for q in queries if q.get("batch") == 4]
    sharing = [q for q in batch if _terms(q["query"]) & _terms(q["target_title"])]
    assert len(sharing) > len(batch) // 2


def _batch(number: int) -> list[dict]:
    return [q for q in json.loads(SET.read_text())["queries"] if q.get("batch") == number]


def test_fifth_batch_has_the_composition_questions_md_gives() -> None:
    """questions.md step 9: 50 `paraphrase` queries, one per drawn page (7 tensorflow, all
    its pages left over 1,500 characters; 43 chrome en), each 8-30 words, drawn past the
    fourth batch's pages; `paraphrase` is used by this batch only."""
    batch = _batch(5)
    assert Counter(q["kind"] for q in batch) == {"paraphrase": 50}
    assert all(q["target_title"] and q["target_headings"] for q in batch)
    assert all(8 <= len(q["query"].split()) <= 30 for q in batch)
    assert not any("language" in q for q in batch)
    targets = [q["expected"][0] for q in batch]
    assert len(set(targets)) == 50
    assert _sites(targets) == {"tensorflow": 7, "chrome-en": 43}
    queries = json.loads(SET.read_text())["queries"]
    earlier = {e for q in queries if q.get("batch", 1) < 5 for e in q["expected"]}
    assert not earlier & set(targets)
    assert all(q.get("batch") == 5 for q in queries if q["kind"] == "paraphrase")


def test_paraphrase_queries_avoid_their_page_title_and_heading_words() -> None:
    """The rule of the kind (questions.md step 9): no word of the target's title and none of
    its headings, on five-letter prefixes, function words exempt. The headings are stored
    with each entry (target_headings), so this runs without the corpus."""
    offenders = {
        q["query"]: sorted(
            _terms(q["query"]) & _terms(" ".join([q["target_title"], *q["target_headings"]]))
        )
        for q in _batch(5)
    }
    assert {query: shared for query, shared in offenders.items() if shared} == {}


def test_every_kind_is_a_row_of_the_table() -> None:
    """bench_questions prints a row per kind: a kind missing from GROUPS would be scored only
    inside "all" (the paraphrase kind is the row questions.md step 9 is about)."""
    assert set(GROUPS) >= KINDS


def test_the_fifth_batch_alone_fills_the_paraphrase_row() -> None:
    """--batch 5 keeps the 50 paraphrase queries and nothing else: the table's rows for the
    other kinds are empty (positions are made up here; no ranking runs on the batch)."""
    batch = [q for q in load_questions() if q.batch == 5]
    results = table(batch, {"tier": [None] * len(batch)})
    counts = {
        group: sum(results[half][group]["tier"]["queries"] for half in ("dev", "test"))
        for group in GROUPS
    }
    assert counts == {group: 0 for group in GROUPS} | {
        "paraphrase": 50,
        "tensorflow": 7,
        "chrome": 43,
        "all": 50,
    }


def _headings(markdown: str) -> list[str]:
    """A page's headings, as batch 5 stored them: Markdown `#` lines outside code fences
    (attribute blocks such as `{: #id }` and link targets dropped) and HTML <h1>-<h6>."""
    found: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        hashed = re.match(r"\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if hashed:
            text = re.sub(r"\{[:#][^}]*\}", "", hashed.group(1)).strip()
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            found += [text] if text else []
        for tag in re.finditer(r"<h[1-6][^>]*>(.*?)</h[1-6]>", line, re.I):
            found.append(re.sub("<[^>]+>", "", tag.group(1)).strip())
    return list(dict.fromkeys(found))


def test_stored_headings_are_the_pages_headings() -> None:
    """target_headings is every heading of the drawn page, so the rule's test cannot pass on
    a shortened list. Needs the shared corpus; skipped without it (the rule's test does not)."""
    from bench.common import CORPUS_ENV, ROOT

    # Where the benches look (bench/common.py corpus_file), without its exit when absent.
    folder = Path(os.environ.get(CORPUS_ENV) or ROOT.parent / "shared" / "corpus")
    files = [folder / name for name in FILES if "intl" not in name]
    if not all(f.is_file() for f in files):
        pytest.skip("the shared corpus is not here")
    batch = {"documents/" + q["expected"][0]: q["target_headings"] for q in _batch(5)}
    pages = {d.name: d for f in files for d in read_documents(f) if d.name in batch}
    assert set(pages) == set(batch)
    assert {n: _headings(d.content or "") for n, d in pages.items()} == batch


def test_the_title_word_check_catches_a_shared_word() -> None:
    assert _terms("Why is my manifest rejected?") & _terms("Manifest file format")
    assert _terms("リマーケティング広告の入札") & _terms("広告オークション")
    assert not _terms("how do I lock down an iframe") & _terms("Securely embed content")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tier", "hybrid"], "invalid choice: 'hybrid'"),
        (["--half", "dev", "--misses", "test"], "--misses test lists the half"),
    ],
)
def test_the_bench_refuses_bad_options_before_building_its_store(
    args: list[str], says: str
) -> None:
    """A misspelt tier used to be refused only after a minute of building every tier: now
    argparse refuses it (its "invalid choice" comes before any work)."""
    run = subprocess.run(
        [sys.executable, "-m", "bench.bench_questions", "--no-semantic", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=SET.parents[2],
    )
    assert run.returncode == 2
    assert says in run.stderr
