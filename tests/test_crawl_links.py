"""Link extraction and the frontier's rules (mirror/crawl/, pure): table tests."""

from __future__ import annotations

import pytest

from mirror.crawl.frontier import Limits, admit, batches, children
from mirror.crawl.links import link_targets, linked_names, resolve
from mirror.crawl.scope import Scope

BASE = "https://developer.chrome.com/docs/extensions/mv3/intro"
D = "documents/developer.chrome.com/"


@pytest.mark.parametrize(
    ("target", "name"),
    [
        # site-relative and relative, resolved against the page's uri
        ("/docs/webstore/publish", D + "docs/webstore/publish"),
        ("/docs/webstore/publish/", D + "docs/webstore/publish"),
        ("getstarted", D + "docs/extensions/mv3/getstarted"),
        ("./getstarted", D + "docs/extensions/mv3/getstarted"),
        ("../mv2/overview", D + "docs/extensions/mv2/overview"),
        ("../../../../../x", D + "x"),  # above the root stays at the root, as browsers do
        # absolute, other scheme forms, other hosts
        ("https://developer.chrome.com/blog/new", D + "blog/new"),
        ("http://Developer.Chrome.com/blog/new", D + "blog/new"),
        ("//web.dev/learn/css", "documents/web.dev/learn/css"),
        ("https://web.dev/learn/css", "documents/web.dev/learn/css"),
        # anchors and query strings are not part of a name
        ("/docs/a#section", D + "docs/a"),
        ("/docs/a?hl=en", D + "docs/a"),
        ("/docs/a?hl=en#x", D + "docs/a"),
        ("getstarted#top", D + "docs/extensions/mv3/getstarted"),
        ("/docs/a&amp;b", D + "docs/a&b"),  # HTML entities as in <a href>
        # not documents
        ("#only-an-anchor", None),
        ("", None),
        ("mailto:someone@example.com", None),
        ("chrome://extensions", None),
        ("javascript:alert(1)", None),
        ("ftp://example.com/file", None),
        ("https://localhost:8080/x", None),
        ("https://user:pw@example.com/x", None),
        ("https://[::1/x", None),
        ("https://example.com:99999/x", None),  # a port out of range
    ],
)
def test_resolve_maps_a_link_to_a_document_name(target: str, name: str | None) -> None:
    assert resolve(BASE, target) == name


@pytest.mark.parametrize(
    ("markdown", "targets"),
    [
        ("See [the guide](/docs/guide).", ["/docs/guide"]),
        ('[t](/a "a title") and [u](<b c>)', ["/a", "b c"]),
        (
            "[t](https://en.wikipedia.org/wiki/Foo_(bar)) x",
            ["https://en.wikipedia.org/wiki/Foo_(bar)"],
        ),
        ("[![badge](/img.svg)](/docs/page)", ["/docs/page"]),
        ("![an image](/image.png)", []),
        ("[label]: /docs/ref\n\nuse [it][label]", ["/docs/ref"]),
        ("  [label]: <https://web.dev/x> 'title'", ["https://web.dev/x"]),
        ("auto <https://web.dev/a> link", ["https://web.dev/a"]),
        ("<a href=\"/docs/h\">h</a> <A HREF='/docs/i'>", ["/docs/h", "/docs/i"]),
        # code: fenced (backticks, tildes, longer closers, info strings) and inline spans
        ("```\n[no](/in-fence)\n```\n[yes](/after)", ["/after"]),
        ("~~~md\n[no](/tilde)\n~~~\n[yes](/y)", ["/y"]),
        ("````\n```\n[no](/inner)\n```\n````\n[yes](/y)", ["/y"]),
        ("   ```js\n[no](/indented-fence)\n   ```\n", []),
        ("use `[no](/inline)` or ``a ` [no](/double) `` then [yes](/y)", ["/y"]),
        ("```\n[no](/unclosed)\n[still](/code)", []),
        ("text ``` not a fence [yes](/y)", ["/y"]),
        # a lone backtick is literal; code spans end with their paragraph
        ("press <kbd>`</kbd>\n\nsee [yes](/y) and `code`", ["/y"]),
        ("[`api()` and `b[0]`](/docs/api)", ["/docs/api"]),
        # malformed Markdown: nothing raised, nothing invented
        ("[unclosed](/docs/a", []),
        ("[text] (/space-between)", []),
        ("[[nested]](/n)", ["/n"]),
        ("](/stray) [ok](/ok)", ["/ok"]),
        ("[a](\n/newline)", ["/newline"]),
        ("[x]()", []),
        ("\x00[nul](/nul)", ["/nul"]),
    ],
)
def test_link_targets_skip_code_images_and_malformed_links(
    markdown: str, targets: list[str]
) -> None:
    assert link_targets(markdown) == targets


def test_linked_names_are_unique_in_order_and_skip_other_schemes() -> None:
    markdown = (
        "[b](/docs/b) [a](/docs/a) [b again](/docs/b#x) [mail](mailto:x@y.z) "
        "[self](#top) [web](https://web.dev/a?x=1)"
    )
    assert list(linked_names(markdown, BASE)) == [
        D + "docs/b",
        D + "docs/a",
        "documents/web.dev/a",
    ]


@pytest.mark.parametrize(
    ("scope", "name", "inside"),
    [
        (Scope(prefixes=(D + "docs/",)), D + "docs/a", True),
        (Scope(prefixes=(D + "docs/",)), D + "docs", False),
        (Scope(prefixes=(D + "docs/ext",)), D + "docs/extensions", True),  # as ls --prefix
        (Scope(prefixes=(D + "docs/",)), "documents/web.dev/docs/a", False),
        (Scope(trees=(D + "docs/ext",)), D + "docs/ext", True),
        (Scope(trees=(D + "docs/ext",)), D + "docs/ext/a/b", True),
        (Scope(trees=(D + "docs/ext",)), D + "docs/extensions", False),
        (Scope(), D + "docs/a", False),
    ],
)
def test_scope(scope: Scope, name: str, inside: bool) -> None:
    assert scope.contains(name) is inside


def test_a_scope_is_the_prefixes_given_else_the_seeds_trees() -> None:
    assert Scope.of([D + "a/"], [D + "s"]) == Scope(prefixes=(D + "a/",))
    assert Scope.of([], [D + "s", D + "s"]) == Scope(trees=(D + "s",))


@pytest.mark.parametrize(
    ("depth", "limits", "expected"),
    [
        (0, Limits(), [D + "a", D + "b"]),
        (0, Limits(max_depth=1), [D + "a", D + "b"]),
        (1, Limits(max_depth=1), []),  # a page at the last depth adds nothing
        (2, Limits(max_depth=3), [D + "a", D + "b"]),
    ],
)
def test_children_keep_scope_depth_order_and_skip_repeats_and_self(
    depth: int, limits: Limits, expected: list[str]
) -> None:
    linked = [D + "a", "documents/web.dev/x", D + "b", D + "a", D + "self"]
    scope = Scope(prefixes=(D,))
    assert children(linked, depth, scope, limits, exclude=D + "self") == expected


def test_a_cycle_adds_nothing_new_once_both_pages_are_known() -> None:
    # a -> b -> a: b's link back to a is a child, but the store keeps names once, so the
    # frontier (insert-if-absent) is where a cycle ends; children() only filters.
    scope = Scope(prefixes=(D,))
    assert children([D + "a"], 1, scope, Limits(), exclude=D + "b") == [D + "a"]
    assert children([D + "b"], 1, scope, Limits(), exclude=D + "b") == []


@pytest.mark.parametrize(
    ("known", "max_docs", "admitted"),
    [(0, None, 3), (0, 2, 2), (5, 6, 1), (6, 6, 0), (9, 6, 0)],
)
def test_admit_caps_the_frontier_at_max_docs(
    known: int, max_docs: int | None, admitted: int
) -> None:
    assert admit(["x", "y", "z"], known, Limits(max_docs=max_docs)) == ["x", "y", "z"][:admitted]


def test_batches_keep_order() -> None:
    assert list(batches(list(range(5)), 2)) == [[0, 1], [2, 3], [4]]
