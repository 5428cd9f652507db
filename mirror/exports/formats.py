"""The export formats `dk-mirror export` knows, with the options each adds to the command.

Formats are listed here by module path and imported only when used, so `export md` never
loads the HTML renderer. To add one: its module (see base.py) and one `Spec` below.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import InvalidInput
from .base import FileFormatFactory, FormatFactory


@dataclass(frozen=True, slots=True)
class Option:
    """A command-line option only one format takes: `--flag VALUE`, an int or a str."""

    flag: str
    key: str  # the name the format reads it by
    kind: type
    help: str
    default: int | str | None = None


@dataclass(frozen=True, slots=True)
class Spec:
    """One format: its FORMAT argument, module, one-line summary and own options; `one_file`
    when its export is a single file (a `FileFormat`) rather than a folder."""

    name: str
    module: str
    summary: str
    options: tuple[Option, ...] = ()
    one_file: bool = False

    def load(self) -> FormatFactory:
        """The format module's FORMAT."""
        factory: FormatFactory = importlib.import_module(self.module).FORMAT
        return factory

    def load_file(self) -> FileFormatFactory:
        """The one-file format module's FORMAT."""
        factory: FileFormatFactory = importlib.import_module(self.module).FORMAT
        return factory


SPECS: tuple[Spec, ...] = (
    Spec(
        "docset",
        "mirror.exports.docset.export",
        "A Dash/Zeal docset: pages, a typed search index of API symbols, and a feed.",
        (
            Option(
                "--docset-name",
                "docset_name",
                str,
                "docset: the name of NAME.docset (and of NAME.tgz, NAME.xml).",
                "dk-mirror",
            ),
            Option(
                "--feed-url",
                "feed_url",
                str,
                "docset: the URL OUT will be served from (file:// works): writes NAME.tgz and "
                "the feed NAME.xml pointing at it, for Dash and Zeal to subscribe to.",
            ),
        ),
    ),
    Spec(
        "llms",
        "mirror.exports.llms",
        "llms.txt per data source, one .md per page, and a size-capped llms-full.txt.",
        (
            Option(
                "--max-bytes",
                "max_bytes",
                int,
                "llms: the most bytes llms-full.txt may hold (whole pages, in name order; "
                "default 5000000).",
            ),
        ),
    ),
    Spec(
        "md",
        "mirror.exports.md",
        "One .md file per document (front matter + Markdown) and an index.md.",
    ),
    Spec(
        "site",
        "mirror.exports.site",
        "A static HTML site with offline full-text search that works from file://.",
    ),
    Spec(
        "zim",
        "mirror.exports.zim",
        "One .zim file for Kiwix: every page, its full-text index and metadata (extra `zim`).",
        one_file=True,
    ),
)
BY_NAME = {spec.name: spec for spec in SPECS}


def spec(name: str) -> Spec:
    """The format called `name`; InvalidInput listing the known ones otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise InvalidInput(
            f"no export format {name!r}", hint=f"choose one of: {', '.join(sorted(BY_NAME))}"
        ) from None
