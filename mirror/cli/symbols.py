"""`dk-mirror symbols`: the typed API symbols the stored reference pages define."""

from __future__ import annotations

from collections import Counter

import click

from ..symbols.model import TYPES
from . import render
from .common import global_options, json_option, open_mirror


@click.command()
@click.argument("prefix", required=False)
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="At most this many symbols for a PREFIX.",
)
@click.option("--counts", is_flag=True, help="Only how many symbols of each type there are.")
@json_option
@global_options
@click.pass_context
def symbols(
    ctx: click.Context, prefix: str | None, limit: int, counts: bool, as_json: bool
) -> None:
    """List the API symbols (methods, events, types...) the stored reference pages define.

    Those whose name, or else whose last part, starts with PREFIX (case folded), the exact
    name first; every symbol without one. `chrome.storage` lists chrome.storage and its members; `Dense` finds
    tf.keras.layers.Dense. NDJSON with --json.
    """
    mirror = open_mirror(ctx, readonly=True)
    found = mirror.symbol_lookup(prefix, limit) if prefix else mirror.symbol_list()
    if counts:
        by_type = Counter(s.type for s in found)
        shown = {t: by_type[t] for t in (*TYPES, *sorted(set(by_type) - set(TYPES))) if by_type[t]}
        if as_json:
            click.echo(render.to_json({"total": len(found), "byType": shown}))
        else:
            for line in render.table_lines([(t, str(n)) for t, n in shown.items()]):
                click.echo(line)
            click.echo(f"{len(found)} symbol(s)")
        return
    if as_json:
        for symbol in found:
            click.echo(render.to_json_line(symbol.to_json()))
        return
    rows = [(s.name, s.type, s.document + (f"#{s.anchor}" if s.anchor else "")) for s in found]
    for line in render.table_lines([tuple(render.clean(c) for c in row) for row in rows]):
        click.echo(line)
    if not found:
        what = f" starting with {render.clean(prefix)}" if prefix else ""
        click.echo(f"no symbols{what} (they come from stored reference pages)", err=True)
