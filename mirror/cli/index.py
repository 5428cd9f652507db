"""`dk-mirror index`: the local search indexes, the full-text one and the semantic one.

Both are derived from the stored documents (the store is the source of truth): writes keep
both current; `update` embeds what the semantic index lacks (after DK_MIRROR_SEMANTIC was off,
or a Ctrl-C), `check` compares both with the documents, `rebuild` remakes them.
"""

from __future__ import annotations

from typing import Any

import click

from ..service import Mirror
from . import render
from .common import global_options, json_option, open_mirror
from .progress import Bar


@click.group()
def index() -> None:
    """The search indexes: bring the semantic one up to date, check them, or rebuild them."""


def _embed(mirror: Mirror, *, rebuild: bool) -> tuple[int, Any]:
    with Bar("embedding") as progress:
        embedded = mirror.build_index(rebuild=rebuild, progress=progress)
    return embedded, mirror.semantic_status()


@index.command(name="update")
@json_option
@global_options
@click.pass_context
def index_update(ctx: click.Context, as_json: bool) -> None:
    """Embed the documents the semantic index lacks (every write also does).

    Resumes after a crash or Ctrl-C, or a time with DK_MIRROR_SEMANTIC=off; every write keeps
    the index up to date and search fuses it with the full-text ranking.
    """
    embedded, status = _embed(open_mirror(ctx), rebuild=False)
    if as_json:
        click.echo(render.to_json({"embedded": embedded, **status.to_json()}))
        return
    click.echo(f"{embedded} document(s) embedded; semantic search {status.describe()[1]}")


@index.command(name="check")
@json_option
@global_options
@click.pass_context
def index_check(ctx: click.Context, as_json: bool) -> None:
    """Compare the indexes with the stored documents; exit 1 if the full-text one is stale."""
    # It only reads the store (a read-only one's index is a copy in the cache folder, as for
    # search), so a store that cannot be written is checked, not refused.
    mirror = open_mirror(ctx, read_only_ok=True)
    state = mirror.check_index()
    semantic = mirror.semantic_status()
    if as_json:
        click.echo(
            render.to_json(
                {
                    "consistent": state.consistent,
                    "documents": state.documents,
                    "indexed": state.indexed,
                    "orphans": state.orphans,
                    "stale": state.stale,
                    "semantic": semantic.to_json(),
                }
            )
        )
    else:
        verdict = "stale: run dk-mirror index rebuild" if state.stale else "up to date"
        click.echo(
            f"documents with content: {state.documents}\nindexed: {state.indexed}\n"
            f"entries without a document: {state.orphans}\n"
            f"full-text index matches the text: {'yes' if state.consistent else 'no'}\n{verdict}\n"
            f"semantic: {semantic.describe()[1]}"
        )
    if state.stale:
        ctx.exit(1)


@index.command(name="rebuild")
@click.option("--semantic", is_flag=True, help="Embed every document again too.")
@global_options
@click.pass_context
def index_rebuild(ctx: click.Context, semantic: bool) -> None:
    """Rebuild the full-text index and the symbol index from the stored documents (and with
    --semantic, every vector)."""
    mirror = open_mirror(ctx)
    count = mirror.rebuild_index()
    click.echo(f"indexed {count} documents", err=True)
    # Writes keep the symbols current; a rebuild applies a newer version's extraction rules.
    click.echo(f"{mirror.rebuild_symbols()} symbol entries", err=True)
    if semantic:
        embedded, status = _embed(mirror, rebuild=True)
        click.echo(
            f"{embedded} document(s) embedded; semantic search {status.describe()[1]}", err=True
        )
