"""Markdown's fenced code blocks: which lines lie outside them.

A fence opens with three or more backticks or tildes (up to three spaces in) and closes with a
fence of the same character at least as long, as CommonMark has it. A heading, a link or a
symbol inside a code sample is text of the sample, not of the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def outside_fences(lines: Iterable[str]) -> Iterator[str]:
    """The lines of `lines` that are neither fences nor inside a fenced block, in order."""
    fence: str | None = None
    for line in lines:
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        yield line
