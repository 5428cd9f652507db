"""What a writing command shows of the semantic index: the vectors its writes compute.

Writes embed what they stored after each commit (service/semantic.py). A bulk write (import,
snapshot import, demo) draws an "embedding" bar on a terminal while it does; every writing
command ends with one summary line, so a log or a CI job also sees what it cost. Ctrl-C
while embedding keeps the documents: `interrupted_note` says what waits and how it resumes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from .progress import Bar

if TYPE_CHECKING:
    from ..service import Mirror


@contextmanager
def embedding_shown(mirror: Mirror, *, bar: bool = True) -> Iterator[None]:
    """Show what the writes inside embed: a bar (with `bar`; commands that draw a bar of
    their own pass False, as two bars redrawn at once garble each other), then one line."""
    drawn = Bar("embedding") if bar else None
    if drawn is not None:
        mirror.show_embedding(drawn.update)
    try:
        yield
    finally:
        if drawn is not None:
            drawn.close()
            mirror.show_embedding(None)
    done = mirror.embedding
    if done.embedded:
        click.echo(
            f"embedded {done.embedded} document(s) for semantic search in {done.seconds:.1f} s",
            err=True,
        )


def interrupted_note(exc: BaseException) -> str | None:
    """What a Ctrl-C during embedding left, if `exc` (or what it was raised from) is one."""
    from ..service.semantic import EmbeddingInterrupted

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, EmbeddingInterrupted):
        seen = seen.__context__
    if seen is None:
        return None
    return (
        f"interrupted while embedding: every document written is saved; {seen.pending} "
        "wait for a vector (search ranks them by words meanwhile): `dk-mirror index update`, "
        "or the next write, embeds them"
    )
