"""`export llms`: the llms.txt convention (llmstxt.org) for agents and the tools that read it.

OUT/llms.txt                 H1, a blockquote summary, a link to each data source's llms.txt
OUT/<host>/llms.txt          that host's pages as link lists, one H2 section per top folder
OUT/<host>/<path>.md         one Markdown file per page (the md export's paths), ending with
                             its original address and licences
OUT/llms-full.txt            every page in one file, whole pages in name order, up to
                             --max-bytes; the pages that did not fit are named at its end
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from ..errors import InvalidInput
from ..models import Document
from ..snapshots.mdpaths import link_target, md_text, relative_path
from . import attribution
from .base import Entry, OutFile, Pages

TITLE = "Google developer documentation"
FULL = PurePosixPath("llms-full.txt")
INDEX = PurePosixPath("llms.txt")
TOP_LEVEL = "Top level"
_DESCRIPTION_CHARS = 200
DEFAULT_MAX_BYTES = 5_000_000
# Room kept at the end of llms-full.txt for the note on what was left out.
_TAIL_ROOM = 2048


def page_markdown(doc: Document) -> str:
    """One page's Markdown file: its title as H1 (unless it starts with one), its content,
    and a last line with its original address and licences."""
    content = (doc.content or "").strip("\n")
    if not content.startswith("# "):
        content = f"# {md_text(doc.title or doc.name)}\n\n{content}"
    return f"{content}\n\n---\n\n{attribution.credit_line(doc.uri)}\n"


def _section(entry: Entry) -> str:
    segments = entry.name.split("/")[2:]
    return segments[0] if len(segments) > 1 else TOP_LEVEL


def _describe(entry: Entry) -> str:
    text = " ".join((entry.description or "").split())
    if len(text) > _DESCRIPTION_CHARS:
        text = text[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
    return f": {md_text(text)}" if text else ""


def host_index_path(host: str) -> PurePosixPath:
    """Where a host's llms.txt goes: in the host's folder."""
    return PurePosixPath(relative_path("documents/" + host).parts[0], INDEX.name)


def host_index(host: str, entries: list[Entry]) -> str:
    """A host's llms.txt: its pages as link lists, one section per top-level folder."""
    sections: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        sections[_section(entry)].append(entry)
    lines = [
        f"# {md_text(host)}\n",
        f"> {len(entries)} pages of {md_text(host)} documentation, as Markdown files beside "
        "this one. Content under CC BY 4.0, code samples under Apache 2.0 (see ../NOTICE.md).\n",
    ]
    order = sorted(sections, key=lambda s: (s != TOP_LEVEL, s))
    for section in order:
        lines.append(f"## {md_text(section)}\n")
        rows = []
        for entry in sorted(sections[section], key=lambda e: e.name):
            path = PurePosixPath(*relative_path(entry.name).parts[1:])
            label = md_text(entry.title or entry.name)
            rows.append(f"- [{label}]({link_target(path)}){_describe(entry)}")
        lines.append("\n".join(rows) + "\n")
    return "\n".join(lines)


def root_index(by_host: Mapping[str, list[Entry]], prefix: str | None, full_note: str) -> str:
    """The top llms.txt: what the export holds and a link to each data source's llms.txt."""
    total = sum(len(v) for v in by_host.values())
    scope = f" under `{prefix}`" if prefix else ""
    lines = [
        f"# {TITLE}\n",
        f"> {total} pages{scope} from {len(by_host)} data source(s) of Google's developer "
        "documentation, exported by dk-mirror from the Developer Knowledge API as one Markdown "
        "file per page. Content under CC BY 4.0, code samples under Apache 2.0 (NOTICE.md).\n",
        "## Data sources\n",
        "\n".join(
            f"- [{md_text(host)}]({link_target(host_index_path(host))}): {len(entries)} pages"
            for host, entries in sorted(by_host.items())
        )
        + "\n",
        "## Optional\n",
        f"- [All pages in one file]({FULL.name}): {full_note}\n",
    ]
    return "\n".join(lines)


class LlmsText:
    """One run of the llms format; option `max_bytes` caps llms-full.txt."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        given = options.get("max_bytes")
        self.max_bytes = DEFAULT_MAX_BYTES if given is None else int(given)
        if self.max_bytes < 2 * _TAIL_ROOM:
            raise InvalidInput(
                f"--max-bytes {self.max_bytes} leaves no room for a page in llms-full.txt",
                hint=f"give at least {2 * _TAIL_ROOM} (the default is {DEFAULT_MAX_BYTES})",
            )
        self.notes: list[str] = []

    def files(self, pages: Pages) -> Iterator[OutFile]:
        """Each page's .md (collecting llms-full.txt as they pass), then the indexes."""
        head = (
            f"# {TITLE} (full text)\n\n> Every page of llms.txt in one file, in name order, "
            "whole pages only. Content under CC BY 4.0, code samples under Apache 2.0 "
            "(NOTICE.md).\n"
        ).encode()
        full, size = [head], len(head)
        budget = self.max_bytes - _TAIL_ROOM
        left_out: list[str] = []
        for doc in pages.documents():
            data = page_markdown(doc).encode("utf-8")
            yield OutFile(relative_path(doc.name), data)
            part = b"\n\n" + data
            # Whole pages in name order, up to the first that does not fit: what is in the
            # file is then a plain range of the list, and what is not starts at one name.
            if not left_out and size + len(part) <= budget:
                full.append(part)
                size += len(part)
            else:
                left_out.append(doc.name)
        by_host: dict[str, list[Entry]] = defaultdict(list)
        for entry in pages.entries:
            by_host[entry.data_source].append(entry)
        for host, entries in sorted(by_host.items()):
            yield OutFile(host_index_path(host), host_index(host, entries).encode("utf-8"))
        total = len(pages.entries)
        if left_out:
            note = (
                f"{total - len(left_out)} of {total} pages; the {len(left_out)} from "
                f"{left_out[0]} on did not fit in {self.max_bytes} bytes (--max-bytes)"
            )
            self.notes.append(f"llms-full.txt holds {note}")
            full.append(
                f"\n\n---\n\nLeft out: {len(left_out)} pages, from `{left_out[0]}` to "
                f"`{left_out[-1]}` in name order, to keep this file under {self.max_bytes} "
                "bytes. Each is in its own .md file, listed in llms.txt.\n".encode()
            )
        else:
            note = f"all {total} pages"
        yield OutFile(FULL, b"".join(full))
        yield OutFile(INDEX, root_index(by_host, pages.selection.prefix, note).encode("utf-8"))


FORMAT = LlmsText
