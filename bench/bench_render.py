"""The browser's document rendering: sanitising and link rewriting, against Markdown rendering.

Usage: python -m bench.bench_render [--docs 500] [--repeat 3]
For the first N documents of the English Chrome corpus, times `markdown_html.render` (the
baseline, measured in the same run) and then `sanitize.parse(...).render(classify)` on its
output, and prints both totals and the ratio sanitise / Markdown (no target: a record of what
the safety costs next to the rendering it follows).
"""

from __future__ import annotations

import argparse

from bench.common import add_corpus_option, english_corpus, median, ms, timed
from mirror.records import read_documents
from mirror.render import links, markdown_html, sanitize


def main() -> None:
    """Run the benchmark and print its ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    add_corpus_option(parser)
    args = parser.parse_args()
    corpus = english_corpus(args.corpus)
    docs = [d for _, d in zip(range(args.docs), read_documents(corpus), strict=False)]
    pages = [(doc.uri or "https://developer.chrome.com/", doc.content or "") for doc in docs]
    rendered: list[tuple[str, str]] = []

    def markdown() -> None:
        rendered[:] = [(uri, markdown_html.render(text)) for uri, text in pages]

    def sanitise() -> None:
        for uri, html in rendered:
            body = sanitize.parse(html)
            body.render(lambda href, uri=uri: links.classify(href, uri, set(), set()))

    base = median(timed(markdown, args.repeat))
    safe = median(timed(sanitise, args.repeat))
    size = sum(len(html) for _, html in rendered)
    print(f"{len(pages)} documents, {size / 1e6:.1f} MB of HTML")
    print(f"markdown render (baseline): {ms(base)}")
    print(f"sanitise + link rewrite:    {ms(safe)}")
    print(f"ratio sanitise / markdown:  {safe / base:.2f}x (no target)")


if __name__ == "__main__":
    main()
