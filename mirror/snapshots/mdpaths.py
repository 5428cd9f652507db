"""Document names to file paths for a Markdown tree export, safe on Linux, macOS and Windows.

    documents/developer.chrome.com/docs/extensions/mv3/intro
        -> developer.chrome.com/docs/extensions/mv3/intro.md
    documents/developer.chrome.com          -> developer.chrome.com/index.md
    documents/developer.chrome.com/index    -> developer.chrome.com/%69ndex.md

The host and every path segment become one path component each, the last segment a file
(`<component>.md`), the others directories. A component is the segment's UTF-8 with every byte
outside `a-z 0-9 - _ .` written as `%XX` (upper-case hex), like URL percent-encoding. So `%` is
`%25`, upper case is `%41`.. (case twins differ on case-insensitive file systems), and non-ASCII is
escaped byte by byte (paths are pure ASCII, so macOS never re-normalises NFC/NFD). On top of that,
a byte that would be literal is escaped too where it would be unsafe or ambiguous:

- a `.` at the start or end of a component (no `.`, `..`, hidden files or Windows' trailing dots);
- the first byte of a component whose part before its first `.` is a Windows device name
  (`con`, `con.md`, `com1.txt` ...: `%63on`);
- the `.` of a directory component ending in `.md`, so a file never shares a path with a
  directory (`a/x.md` is the file of `a/x`; the directory `a/x.md/` is written `a/x%2Emd/`);
- the `i` of a last segment `index`, since `<host>/index.md` is the host's own page.

Each of these components decodes back to its segment with `urllib.parse.unquote`, which makes
the mapping injective. An empty segment (never in a canonical name) is `~`. A component longer
than MAX_COMPONENT characters is cut to `<prefix>~<16 hex of the segment's sha256>`; nothing else
contains a literal `~`, so these never meet an uncut component. The whole path can still exceed
Windows' 260-character MAX_PATH for very long names (names are up to 500 characters).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from itertools import groupby
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from ..errors import InvalidInput, InvalidName
from ..models import Document, content_sha256, data_source_of

PREFIX = "documents/"
# Well under the 255-byte limit of every common file system, leaving room for long prefixes.
MAX_COMPONENT = 120
INDEX = "index.md"
_LITERAL = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789-_.")
_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$", "clock$"}
    | {f"{port}{n}" for port in ("com", "lpt") for n in range(10)}
)
_HEX_TAIL = 16


class UnsafePath(InvalidInput):
    """A relative path that would leave the export folder."""


def _escape(data: bytes) -> str:
    last = len(data) - 1
    return "".join(
        chr(b) if b in _LITERAL and not (b == 0x2E and i in (0, last)) else f"%{b:02X}"
        for i, b in enumerate(data)
    )


def _component(segment: str, *, leaf: bool) -> str:
    if not segment:
        return "~.md" if leaf else "~"
    # surrogatepass: a lone surrogate cannot come from JSON text, but stay total anyway.
    data = segment.encode("utf-8", "surrogatepass")
    body = _escape(data)
    if body.split(".", 1)[0] in _DEVICES or (leaf and body == "index"):
        body = f"%{data[0]:02X}{body[1:]}"
    if not leaf and body.endswith(".md"):
        body = body[:-3] + "%2Emd"
    suffix = ".md" if leaf else ""
    if len(body) + len(suffix) > MAX_COMPONENT:
        cut = body[: MAX_COMPONENT - len(suffix) - _HEX_TAIL - 1]
        # Never end the prefix inside a %XX escape, so it stays readable and unambiguous.
        tail = cut.rfind("%", len(cut) - 2)
        if tail != -1:
            cut = cut[:tail]
        body = f"{cut}~{hashlib.sha256(data).hexdigest()[:_HEX_TAIL]}"
    return body + suffix


def relative_path(name: str) -> PurePosixPath:
    """The relative `.md` path of a document in a Markdown tree export (see module docstring)."""
    if not name.startswith(PREFIX):
        raise InvalidName(f"{name[:120]!r} is not a document name (documents/{{host}}/{{path}})")
    host, *segments = name[len(PREFIX) :].split("/")
    if not segments:
        return PurePosixPath(_component(host, leaf=False), INDEX)
    dirs = [_component(s, leaf=False) for s in (host, *segments[:-1])]
    return PurePosixPath(*dirs, _component(segments[-1], leaf=True))


def check_inside(root: Path, relative: PurePosixPath) -> Path:
    """`root / relative`, resolved; UnsafePath if it is absolute, climbs out or escapes `root`."""
    text = str(relative)
    parts = relative.parts
    if relative.is_absolute() or not parts or ".." in parts or "\\" in text or ":" in text:
        raise UnsafePath(f"refusing to write outside the export folder: {text[:200]!r}")
    base = root.resolve()
    target = base.joinpath(*parts).resolve()
    # resolve() follows symlinks already in the tree, so a planted link cannot redirect us.
    if target == base or not target.is_relative_to(base):
        raise UnsafePath(f"{text[:200]!r} resolves to {target}, outside {base}")
    return target


def _yaml_quote(value: str) -> str:
    # A double-quoted scalar that is valid YAML 1.1/1.2 and JSON alike: printable characters stay
    # as they are; controls, line separators, BOM and non-characters become \\uXXXX escapes.
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F or (
            code >= 0xA0
            and code not in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF)
            and not 0xD800 <= code <= 0xDFFF
        ):
            out.append(ch)
        else:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\u{code:04x}"))
    out.append('"')
    return "".join(out)


def front_matter(doc: Document) -> str:
    """A YAML front matter block (`---` ... `---`) for the document's Markdown file."""
    digest = f"sha256:{content_sha256(doc.content)}" if doc.content is not None else None
    fields: list[tuple[str, str | int | None]] = [
        ("name", doc.name),
        ("uri", doc.uri),
        ("title", doc.title),
        ("description", doc.description),
        ("dataSource", doc.data_source),
        ("updateTime", doc.update_time),
        ("contentLengthBytes", doc.content_length_bytes),
        ("sha256", digest),
    ]
    lines = ["---"]
    for key, value in fields:
        if value is None:
            shown = "null"
        elif isinstance(value, int):
            shown = str(value)
        else:
            shown = _yaml_quote(value)
        lines.append(f"{key}: {shown}")
    return "\n".join([*lines, "---", ""])


def md_text(text: str) -> str:
    """`text` on one line with Markdown's active characters escaped: a title stays literal."""
    flat = " ".join(text.split())
    return "".join("\\" + c if c in "\\`*_[]<>#!|" else c for c in flat)


def index_markdown(entries: Iterable[tuple[str, str | None, PurePosixPath]]) -> str:
    """An index.md linking every (name, title, relative path), grouped by host and sorted."""
    rows = sorted(entries, key=lambda e: (data_source_of(e[0]), e[0]))
    hosts = len({data_source_of(name) for name, _, _ in rows})
    lines = [index_head(len(rows), hosts)]
    for host, group in groupby(rows, key=lambda e: data_source_of(e[0])):
        lines.append(index_host(host))
        lines.extend(index_entry(name, title, path) for name, title, path in group)
    return "".join(lines)


# index_markdown in pieces, for a writer that streams a store too large to hold its entries.
def index_head(documents: int, hosts: int) -> str:
    """The start of index.md, for `documents` documents from `hosts` hosts."""
    return f"# Documents\n\n{documents} documents from {hosts} hosts.\n"


def index_host(host: str) -> str:
    """The heading of one host's section of index.md (hosts come sorted)."""
    return f"\n## {md_text(host)}\n\n"


def link_target(path: PurePosixPath) -> str:
    """A relative path as a Markdown or HTML link target."""
    # quote() escapes `%` too: the file `%41bc.md` is reached by the link `%2541bc.md`.
    return quote(path.as_posix(), safe="/")


def index_entry(name: str, title: str | None, path: PurePosixPath) -> str:
    """One document's line of index.md (within its host, names come sorted)."""
    target = link_target(path)
    label = md_text(title) if title and title.strip() else md_text(name)
    return f"- [{label}]({target}) — {md_text(name)}\n"
