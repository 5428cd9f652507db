"""Snippets read as prose: Markdown syntax and link targets never carry the marks."""

from __future__ import annotations

import pytest

from mirror.models import Document
from mirror.search.snippets import best_window, link_labels, plain_text

from .cli_store import put_documents


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


def test_window_ends_between_words_not_inside_one():
    # A cut inside a word marked a fragment of it: "tf.keras.layers.Dropout(0.2), **tf**.**kera**…"
    # (tensorflow.org/r1/tutorials/README, for "tf.keras.layers.Dense").
    text = (
        "model = tf.keras.Sequential([ tf.keras.layers.Dropout(0.2), tf.keras.layers.Dense(10) ])"
    )
    segments = best_window(text, "tf.keras.layers.Dense", width=70)
    joined = "".join(s for s, _ in segments)
    assert joined.endswith("…")
    shown = joined.removesuffix("…").split()
    assert shown and all(word in text.split() for word in shown), joined
    assert all(s in {"tf", "keras", "layers", "Dense"} for s, marked in segments if marked)


def test_a_window_without_a_space_near_its_end_is_cut_at_its_width():
    # A long token (a URL, a run of CJK characters) has no space to end at: cut it as before.
    text = "See " + "x" * 300
    joined = "".join(s for s, _ in best_window(text, "see", width=100))
    assert joined == text[:100] + "…"


def test_stop_words_of_the_query_are_not_marked():
    segments = best_window("Move the data from the cache to the network.", "how to move from cache")
    marked = {s for s, m in segments if m}
    assert marked == {"Move", "cache"}
    # A query of stop words only still marks them (there is nothing else to show).
    assert {s for s, m in best_window("To be or not to be.", "to be") if m} == {"To", "be", "to"}


def test_the_letter_an_apostrophe_leaves_is_not_marked():
    segments = best_window("Save the user's options across devices.", "the user's options")
    assert {s for s, m in segments if m} == {"user", "options"}
    # A one-character word of a CJK query is a word: it is marked.
    assert {s for s, m in best_window("使用 可 以", "可") if m} == {"可"}


def test_plain_text_drops_html_tags_and_decodes_entities():
    assert plain_text('Trace once.<br/><div style="font-style: italic;">Note&nbsp;this.</div>') == (
        "Trace once. Note this."
    )


# Residue once left in snippets and answers, each from a page of the corpus (abridged).
RESIDUE = [
    (  # developer.chrome.com/blog/new-in-chrome-62: a template comment
        "## OpenType Variable Fonts {: #otvf }\n\n"
        "{# TODO(petele): video element, float-right, auto-play #}\nTraditionally, one font",
        "OpenType Variable Fonts — Traditionally, one font",
    ),
    (  # developer.chrome.com/articles/css-color-mix: a template tag over several lines
        '<figure>\n  {% Img\n    src="image/vS06HQ1YTsbMKSFTIPl2iogUQP73/iaoqyLqPgCpCZp54NUpY.png",'
        '\n    alt="7 color spaces", width="800", height="200" %}\n</figure>\nMixing black and white',
        "Mixing black and white",
    ),
    (  # developer.chrome.com/404: HTML comments
        "<!--lint disable first-heading-level-->\n# Aw, Snap!\n"
        "<!--lint enable first-heading-level-->\n\nWe couldn't find that page.",
        "Aw, Snap! — We couldn't find that page.",
    ),
    (  # developer.chrome.com/blog/faster-devtools-startup: brackets inside a link's text
        "2. [CL 2442012: [devtools] Use `ExecuteJavaScriptMethod` in DevTools]"
        "(https://chromium-review.googlesource.com/c/chromium/src/+/2442012)",
        "2. CL 2442012: [devtools] Use ExecuteJavaScriptMethod in DevTools",
    ),
    (  # developer.chrome.com/docs/devtools/console/api: brackets inside a reference link
        "Call [`console.countReset([label])`][8] to reset the count.",
        "Call console.countReset([label]) to reset the count.",
    ),
    (  # developer.chrome.com/articles/idle-detection: a Markdown table
        "| Step                                     | Status                   |\n"
        "| ---------------------------------------- | ------------------------ |\n"
        "| 1. Create explainer                      | [Complete][explainer]    |",
        "Step · Status 1. Create explainer · Complete",
    ),
    (  # developer.chrome.com/blog/chips-origin-trial: a backslash line break
        "will not be able to read nor write partitioned cookies.\\\n"
        "The CHIPS origin trial is currently not supported in service workers.",
        "will not be able to read nor write partitioned cookies. The CHIPS origin trial is "
        "currently not supported in service workers.",
    ),
    (  # developer.chrome.com/articles/authenticate-secure-payment-confirmation: list bullets
        "   *  If the RP wishes the merchant to use SPC, the RP responds.\n"
        "   *  If an authentication is not needed, the merchant can continue.",
        "• If the RP wishes the merchant to use SPC, the RP responds. • If an authentication is "
        "not needed, the merchant can continue.",
    ),
    (  # tensorflow.org/hub/model_compatibility: inline tags leave no space before punctuation
        'per the <a href="https://www.tensorflow.org/guide/migrate#using_a_custom_model_fn">custom '
        'model_fn guide</a>.\n      <br/><div style="font-style: italic; font-size: 14px;">\n'
        '        Note: hub.KerasLayer <span style="font-weight: bold;">does not</span>\n'
        "        fill in graph collections",
        "per the custom model_fn guide. Note: hub.KerasLayer does not fill in graph collections",
    ),
    (  # developer.chrome.com/docs/extensions/mv3/options: link reference definitions at the end
        "provide fixed minimum dimensions for the options page to ensure that the\n"
        "embedded page will find an appropriate size.\n\n"
        "[1]: /docs/extensions/reference/storage#property-sync\n[2]: #full_page\n"
        "  [comment]: <> (TODO: update the using-plugins link)\n",
        "provide fixed minimum dimensions for the options page to ensure that the embedded page "
        "will find an appropriate size.",
    ),
    (  # developer.chrome.com/articles/css-layout-gets-smarter-with-calc: an 8 KB inline image
        "If it had a background color of green it\u2019d look like:\n\n"
        '<img src="data:image/jpeg;base64,' + "/9j/4AAQSkZJRgABAQEASABIAAD" * 40 + '" alt="">\n\n'
        "and if you shrunk the parent size",
        "If it had a background color of green it\u2019d look like: and if you shrunk the parent size",
    ),
    (  # www.tensorflow.org/guide/create_op: Markdown's backslash escapes, a blockquote
        "the generated function will be given a snake\\_case name\n\n"
        "> Note on `gcc` version `>=5`: gcc uses the new C++\n> ABI since version 5.\n"
        ">> Nested, and `a\\_b` in code stays; \\*not emphasis\\* but *this*.",
        "the generated function will be given a snake_case name Note on gcc version >=5: gcc "
        "uses the new C++ ABI since version 5. Nested, and a\\_b in code stays; *not emphasis* "
        "but this.",
    ),
    (  # developer.chrome.com/articles/webtransport, blog/budget-api: escapes in prose
        "to send a <code>[RESET\\_STREAM](https://w3c.github.io/webtransport/#stream-reset)</code>"
        " (Open chrome://flags/\\#enable-experimental-web-platform-features in",
        "to send a RESET_STREAM (Open chrome://flags/#enable-experimental-web-platform-features in",
    ),
    (  # developer.chrome.com/docs/extensions/mv3/faq: emphasis over a soft line break, but
        # never over a paragraph's end
        "sometimes take longer for an update. _Do not reply to the bug to ask when the issue "
        "will be\n    fixed._ If your bug has not been modified after two weeks\n\n"
        "a _stray marker\n\nand one_ more",
        "sometimes take longer for an update. Do not reply to the bug to ask when the issue will "
        "be fixed. If your bug has not been modified after two weeks a _stray marker and one_ more",
    ),
    (  # developer.chrome.com/ja/articles/user-agent-client-hints, ja/articles/contact-picker,
        # ja/docs/privacy-sandbox/fledge: emphasis set against CJK text, with no space
        "この文字列は、過去*数十年*に渡って、上に*Components*をBlink の*シグナル*は、"
        "2 * 3 * 4 と a*b*c と 使用_斜体_文字",
        "この文字列は、過去数十年に渡って、上にComponentsをBlink のシグナルは、"
        "2 * 3 * 4 と a*b*c と 使用_斜体_文字",
    ),
]


# Code keeps its characters: what the snippet or answer is about (the pages, abridged).
CODE = [
    (  # developer.chrome.com/articles/at-scope: an element in a code span
        "to target only the `<img>` elements in the `.card` component",
        "to target only the <img> elements in the .card component",
    ),
    (  # developer.chrome.com/blog/new-in-chrome-114: a code span as a link's text
        "This is similar to the [`<dialog>`](https://developer.mozilla.org/docs/Web/HTML/Element"
        "/dialog) element, but",
        "This is similar to the <dialog> element, but",
    ),
    (  # an index expression, a dunder, and a code span holding a backtick
        "Call `handlers[name](event)` from `__init__`; write ``a ` b`` as is.",
        "Call handlers[name](event) from __init__; write a ` b as is.",
    ),
    (  # a fenced block of HTML: its tags are its text; its fence lines go
        'Markup:\n\n```html {: .devsite-terminal}\n<div tabindex="0">Focus</div>\n'
        "# not a heading\n```\n\nAfter <br/>it.",
        'Markup: <div tabindex="0">Focus</div> # not a heading After it.',
    ),
    (  # www.tensorflow.org/r1/guide/graph_viz, r1/guide/custom_estimators: a heading's id;
        # a template comment after it is still one
        "## Interaction {#interaction}\n\nNavigate the graph. {# a comment #}Zoom in.",
        "Interaction — Navigate the graph. Zoom in.",
    ),
    (  # www.tensorflow.org/r1/guide/extend/op, r1/guide/debugger: a fence inside a
        # blockquote; its backticks paired as spans, code was shielded twice ("&#62; def")
        "looks like:\n>\n> ```python\n> def zero_out(to_zero, name=None):\n>   Args: A `Tensor`.\n"
        "> ```\n>\n> If `to_zero` is passed an `int32` tensor",
        "looks like: def zero_out(to_zero, name=None): Args: A `Tensor`. If to_zero is passed "
        "an int32 tensor",
    ),
    (  # developer.chrome.com/docs/extensions/mv3/manifest/input_components: code spans of
        # three backticks ("input&#95;view")
        "The key accepts an array of objects: ```name```, ```layouts```, ```input_view```, and "
        "```options_page``` (Refer to the table below).",
        "The key accepts an array of objects: name, layouts, input_view, and options_page (Refer "
        "to the table below).",
    ),
    (  # developer.chrome.com/docs/extensions/mv2/match_patterns, www.tensorflow.org/install/
        # source: HTML code elements, whose `*` and `_` were read as emphasis
        "<td><code>http://*/*</code></td> matches <code>https://*.google.com/foo*bar</code>; "
        '<code>print(tf.__version__)</code> and <code class="x">a_b_c</code>',
        "http://*/* matches https://*.google.com/foo*bar; print(tf.__version__) and a_b_c",
    ),
    (  # a stray backtick does not make code of the next paragraph
        "It`s here.\n\nSee <b>this</b> and [that](https://x.test/).",
        "Its here. See this and that.",
    ),
]


@pytest.mark.parametrize(("markdown", "prose"), CODE)
def test_code_keeps_its_characters(markdown, prose):
    assert plain_text(markdown) == prose


@pytest.mark.parametrize(("markdown", "prose"), RESIDUE)
def test_corpus_markup_leaves_no_residue(markdown, prose):
    assert plain_text(markdown) == prose


# developer.chrome.com/docs/lighthouse/performance/lighthouse-total-blocking-time (abridged):
# a shortcut reference link, its definition at the end of the page with the others.
TBT = (
    "## What TBT measures\n\n"
    "The sum is calculated by adding the _blocking portion_ of all [long tasks] between "
    "[First Contentful Paint][fcp] and [Time to Interactive][tti].\n\n"
    + "".join(
        f"## Step {n}\n\nRemove unused code and defer scripts that delay the page, step {n} "
        "of the usual advice for a faster load.\n\n"
        for n in range(1, 40)
    )
    + "[long tasks]: https://web.dev/long-tasks-devtools/\n"
    "[fcp]: /docs/lighthouse/performance/first-contentful-paint/\n"
    "[tti]: /docs/lighthouse/performance/interactive/\n"
)


def test_a_shortcut_reference_to_a_label_the_page_defines_reads_as_its_text():
    labels = link_labels(TBT)
    assert labels == {"long tasks", "fcp", "tti"}
    chunk = TBT.split("\n\n")[1]  # the definitions are in no chunk of it
    assert plain_text(chunk, labels) == (
        "The sum is calculated by adding the blocking portion of all long tasks between "
        "First Contentful Paint and Time to Interactive."
    )
    # Matched as CommonMark matches a label: case and runs of spaces aside.
    assert plain_text("all [Long  Tasks] count", labels) == "all Long Tasks count"


def test_brackets_that_are_no_defined_link_stay():
    labels = link_labels("[fcp]: /first-contentful-paint/\n")
    # A checkbox, an index outside code, a label the page does not define, an escaped one.
    prose = "- [x] done with a[i] and [fcp2], not \\[fcp]"
    assert plain_text(prose, labels) == "• [x] done with a[i] and [fcp2], not [fcp]"
    # Code keeps its characters, brackets included, even around a defined label.
    assert plain_text("Write `[fcp]` or `a[fcp]`.", labels) == "Write [fcp] or a[fcp]."
    # Without the page's labels nothing is taken for a link.
    assert plain_text("all [fcp] here") == "all [fcp] here"


def test_search_and_answer_show_a_shortcut_reference_as_its_text(cli_offline, db_url):
    # The real commands on a real store: the snippet's chunk and the quoted passage hold the
    # link, and only the page (its last lines) defines its label.
    put_documents(
        db_url,
        [
            Document(
                name="documents/developer.chrome.com/docs/lighthouse/tbt",
                title="Total Blocking Time",
                content=TBT,
                data_source="developer.chrome.com",
            )
        ],
    )
    searched = cli_offline("search", "blocking portion of long tasks")
    assert searched.exit_code == 0, searched.output
    assert "of all **long** **tasks** between" in searched.stdout, searched.stdout
    assert "[long tasks]" not in searched.stdout
    answered = cli_offline("answer", "what is the blocking portion of long tasks")
    assert answered.exit_code == 0, answered.output
    assert "portion of all long tasks between First Contentful Paint" in answered.stdout
    assert "[long tasks]" not in answered.stdout
