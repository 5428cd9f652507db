# ruff: noqa: RUF001, SIM115  (the pages' own en dashes; a one-off script)
"""Write tests/data/changes/: pairs of real corpus pages (excerpts) and an edit of each made
the way Google's docs change, with the verdict a reader expects (written by hand here, not
taken from the classifier). Run by hand from the repository root:

    python tests/data/changes/make_pairs.py CORPUS_DIR
"""

import gzip
import json
import sys
from pathlib import Path

CORPUS = Path(sys.argv[1])
OUT = Path("tests/data/changes")
C = "documents/developer.chrome.com/"
PAGES = {}
for f in ["developer.chrome.com-en.jsonl.gz", "tensorflow.org.jsonl.gz"]:
    for line in gzip.open(CORPUS / f, "rt", encoding="utf-8"):
        d = json.loads(line)
        PAGES[d["name"]] = d["content"]


def excerpt(name, lines=100):
    return "\n".join(PAGES[name].splitlines()[:lines]) + "\n"


def edit(text, *swaps):
    for old, new, *times in swaps:
        assert text.count(old) >= 1, (old, text[:200])
        text = text.replace(old, new, *(times or [1]))
    return text


PAIRS = []


def pair(slug, name, swaps, classes, signals, lines=100, why=""):
    old = excerpt(name, lines)
    PAIRS.append((slug, name, old, edit(old, *swaps), classes, signals, why))


N = C + "docs/apps/manifest/name"
pair(
    "limit-in-prose",
    N,
    [("maximum of 45 characters", "maximum of 75 characters")],
    ["signal", "text"],
    ["limit changed"],
    why="a documented maximum raised",
)
CRUX = C + "docs/crux/guides/chrome-ux-report-pagespeed-insights"
pair(
    "limit-in-table",
    CRUX,
    [("TTFB | 0–800ms | 800ms–1800ms | 1800ms+", "TTFB | 0–600ms | 600ms–1500ms | 1500ms+")],
    ["signal", "text"],
    ["limit changed"],
    lines=60,
    why="a thresholds table's numbers changed",
)
pair(
    "table-layout",
    CRUX,
    [
        (
            'Metric | "Good" | "Needs Improvement" | "Poor"\n-- | -- | -- | --',
            '| Metric | "Good" | "Needs Improvement" | "Poor" |\n| :----- | :----: | :---------------: | ---: |',
        ),
        ("LCP | 0–2500ms | 2500–4000ms | 4000ms+", "| LCP    | 0–2500ms | 2500–4000ms | 4000ms+ |"),
        ("FID | 0–100ms | 100–300ms | 300ms+", "| FID    | 0–100ms  | 100–300ms   | 300ms+  |"),
    ],
    ["cosmetic"],
    [],
    lines=60,
    why="the table re-padded, given outer pipes and alignment",
)
pair(
    "links-and-rewrap",
    CRUX,
    [
        (
            "[PageSpeed Insights](https://pagespeed.web.dev/)",
            "[PageSpeed Insights](https://pagespeed.web.dev/?hl=en)",
        ),
        (
            "[Lighthouse](/docs/lighthouse/overview/)",
            "[Lighthouse](https://developer.chrome.com/docs/lighthouse/overview)",
        ),
        (
            "After a few seconds, Lighthouse\naudits will be performed",
            "After a few seconds, Lighthouse audits\nwill be  performed",
        ),
        (
            "- **LCP** measures the time until the page displays what is likely its main\n  content,",
            "- **LCP** measures the time until the page displays what is likely its\n  main content,",
        ),
    ],
    ["cosmetic"],
    [],
    lines=60,
    why="link targets moved and paragraphs re-wrapped",
)
pair(
    "reworded",
    CRUX,
    [
        (
            "CrUX is a collection of real-user experiences from the field",
            "CrUX is a public dataset of real-user experiences collected from Chrome users",
        )
    ],
    ["text"],
    [],
    lines=60,
    why="a sentence rewritten",
)
pair(
    "heading-renamed",
    CRUX,
    [("### Other notable metrics", "### Other metrics")],
    ["structure"],
    [],
    lines=60,
    why="a section retitled",
)
BASICS = C + "docs/apps/app_codelab_basics"
pair(
    "manifest-version",
    BASICS,
    [('"manifest_version": 2,', '"manifest_version": 3,')],
    ["signal", "code"],
    ["API version changed"],
    why="a sample moved to Manifest V3",
)
pair(
    "code-sample-changed",
    BASICS,
    [("bounds: { width: 620, height: 500 }", "innerBounds: { width: 620, height: 500 }")],
    ["code"],
    [],
    why="a sample's call changed",
)
pair(
    "code-sample-reindented",
    BASICS,
    [
        (
            "  chrome.app.window.create('index.html', {\n    id: 'main',",
            "    chrome.app.window.create('index.html', {\n        id: 'main',",
        )
    ],
    ["cosmetic"],
    [],
    why="a sample re-indented",
)
pair(
    "caution-removed",
    BASICS,
    [
        (
            "{% Aside 'caution' %}\n\n**Important:** Chrome will be removing support for Chrome Apps on all platforms. Chrome browser and\nthe Chrome Web Store will continue to support extensions. [**Read the announcement**][1] and learn\nmore about [**migrating your app**][2].\n\n{% endAside %}\n",
            "",
        )
    ],
    ["signal", "text"],
    ["caution notice removed"],
    why="a caution aside taken down",
)
INDEX = C + "articles/content-indexing-api"
pair(
    "warning-added",
    INDEX,
    [
        (
            "## See it in action {: #see-it-in-action }",
            "{% Aside 'warning' %}\nThe sample application below needs a device with Chrome 84 or later; it does\nnothing in desktop browsers.\n{% endAside %}\n\n## See it in action {: #see-it-in-action }",
        )
    ],
    ["signal", "text"],
    ["warning notice added"],
    lines=90,
    why="a warning aside added",
)
pair(
    "note-reworded",
    INDEX,
    [
        (
            "The Content Indexing API is not a searchable index.",
            "The Content Indexing API is not a full-text search index.",
        )
    ],
    ["text"],
    [],
    lines=90,
    why="a note's wording changed (not a notice a reader must see)",
)
DEPS = C + "blog/deps-rems-106"
pair(
    "deprecation-added",
    DEPS,
    [
        (
            "{% Partial 'deprecations-policy.md' %}",
            "## Deprecate `navigator.plugins`\n\n`navigator.plugins` and `navigator.mimeTypes` are deprecated and will return\nempty arrays in a future release. See the\n[intent to deprecate](https://www.chromestatus.com/feature/5741884322349056).\n\n{% Partial 'deprecations-policy.md' %}",
        )
    ],
    ["signal", "structure", "text"],
    ["deprecation notice added"],
    why="a deprecation announced in its own section",
)
pair(
    "deprecation-removed",
    DEPS,
    [
        (
            "## Remove Persistent Quota\n\nThe `window.PERSISTENT` quota type in `webkitRequestFileSystem()` [is now deprecated](https://www.chromestatus.com/feature/5176235376246784).\n\n",
            "## Remove Persistent Quota\n\n",
        )
    ],
    ["signal", "text"],
    ["deprecation notice removed"],
    why="a deprecation notice withdrawn",
)
API = C + "docs/crux/guides/chrome-ux-report-api"
pair(
    "api-version-endpoint",
    API,
    [("chromeuxreport.googleapis.com/v1/", "chromeuxreport.googleapis.com/v2/", -1)],
    ["signal", "code"],
    ["API version changed"],
    lines=120,
    why="every request moved to the API's next version",
)
TABS = C + "docs/android/custom-tabs/howto-custom-tab-request-headers"
pair(
    "table-number-not-a-limit",
    TABS,
    [("Chrome 83 to Chrome 85 | approvelisted", "Chrome 83 to Chrome 86 | approvelisted")],
    ["text"],
    [],
    lines=40,
    why="a number changed in a table that is not about limits",
)

for old in OUT.glob("*.md"):
    old.unlink()
manifest = []
for slug, name, old, new, classes, signals, why in PAIRS:
    assert old != new
    (OUT / f"{slug}.old.md").write_text(old, encoding="utf-8")
    (OUT / f"{slug}.new.md").write_text(new, encoding="utf-8")
    manifest.append(
        {"pair": slug, "from": name, "edit": why, "classes": classes, "signals": signals}
    )
(OUT / "expected.json").write_text(
    json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
)
print(len(manifest), "pairs")
