"""Commands about the store itself: status, import, doctor, db, and the newcomer's demo."""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import click

from .. import __version__
from ..config import ENV_API_KEY
from ..errors import MirrorError, SchemaError, StoreError
from . import render
from .common import global_options, json_option, open_mirror


@click.command()
@json_option
@global_options
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts, bytes, freshness, and where the store is."""
    mirror = open_mirror(ctx, readonly=True)
    stats = mirror.stats()
    now = time.time()
    data: dict[str, Any] = {
        "store": mirror.store.url,
        "schemaRevision": mirror.store.revision(),
        "documents": stats.documents,
        "withContent": stats.with_content,
        "contentBytes": stats.content_bytes,
        "oldestFetch": stats.oldest_fetch,
        "newestFetch": stats.newest_fetch,
        "byDataSource": stats.by_data_source,
        "upstream": mirror.settings.upstream,
        "transport": mirror.settings.transport,
        "offline": mirror.settings.offline,
    }
    if as_json:
        click.echo(render.to_json(data))
        return
    oldest = None if stats.oldest_fetch is None else now - stats.oldest_fetch
    newest = None if stats.newest_fetch is None else now - stats.newest_fetch
    click.echo(
        render.key_values(
            {
                "store": data["store"],
                "documents": f"{stats.documents} ({stats.with_content} with content)",
                "content": render.size(stats.content_bytes),
                "fetched": f"newest {render.age(newest)} ago, oldest {render.age(oldest)} ago",
                "upstream": f"{data['upstream']} over {data['transport']}"
                + (" (offline mode)" if data["offline"] else ""),
            }
        )
    )
    if stats.by_data_source:
        click.echo("by data source:")
        rows = [(f"  {src}", str(n)) for src, n in stats.by_data_source.items()]
        click.echo(render.table(rows))


@click.command(name="import")
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--sample", is_flag=True, help="Import the sample documents shipped with dk-mirror.")
@global_options
@click.pass_context
def import_(ctx: click.Context, file: Path | None, sample: bool) -> None:
    """Import Document records from FILE.jsonl[.gz] (one JSON object per line), all or nothing."""
    if bool(file) == sample:
        raise click.UsageError("give either FILE or --sample")
    mirror = open_mirror(ctx)
    count = mirror.import_sample() if sample else mirror.import_file(file)  # type: ignore[arg-type]
    click.echo(f"imported {count} documents into {mirror.store.url}", err=True)


def _checks(mirror: Any) -> list[tuple[str, str, str]]:
    """(level, topic, message) rows for `doctor`: level is ok, warn or fail."""
    from ..store.schema import SCHEMA_REVISION
    from ..store.store import Store

    settings = mirror.settings
    rows = [("ok", "dk-mirror", f"{__version__} on Python {sys.version.split()[0]}")]
    version = sqlite3.sqlite_version
    probe = sqlite3.connect(":memory:")
    options = {row[0] for row in probe.execute("PRAGMA compile_options")}
    probe.close()
    if "ENABLE_FTS5" in options:
        rows.append(("ok", "sqlite", f"SQLite {version} with FTS5 (offline search)"))
    else:
        rows.append(("warn", "sqlite", f"SQLite {version} without FTS5: no offline search"))
    try:
        store = Store.open(settings.db_url, upgrade=False, readonly=True)
    except SchemaError as exc:
        rows.append(("warn", "schema", str(exc)))
        return rows
    except StoreError as exc:
        rows.append(("fail", "store", str(exc)))
        return rows
    try:
        rows.append(("ok", "store", store.url))
        rows.append(("ok", "schema", f"revision {store.revision()} (expected {SCHEMA_REVISION})"))
        mode = store.journal_mode()
        if store.immutable:
            # Immutable reads ignore journals, so the pragma's answer says nothing of the file.
            rows.append(("ok", "journal", "read-only folder: opened immutable, nothing can write"))
        elif mode is not None:
            level = "ok" if mode == "wal" else "warn"
            rows.append((level, "journal", f"journal_mode={mode} (wal expected)"))
        problems = store.integrity()
        if problems:
            rows.append(("fail", "integrity", "; ".join(problems[:5])))
        else:
            rows.append(("ok", "integrity", "quick_check ok"))
    finally:
        store.close()
    if settings.offline:
        rows.append(("ok", "network", "offline mode: only the store is used"))
    elif settings.is_google and not settings.api_key:
        rows.append(
            (
                "warn",
                "api key",
                f"{ENV_API_KEY} is not set: only cached documents can be served "
                "(create a key: gcloud services api-keys create)",
            )
        )
    else:
        rows.append(("ok", "upstream", f"{settings.upstream} over {settings.transport}"))
    return rows


@click.command()
@json_option
@global_options
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check SQLite, the store's schema and integrity, and the configuration."""
    mirror = open_mirror(ctx, readonly=True)
    rows = _checks(mirror)
    if as_json:
        click.echo(
            render.to_json(
                [{"level": lvl, "check": what, "detail": msg} for lvl, what, msg in rows]
            )
        )
    else:
        click.echo(render.table([(lvl, what, msg) for lvl, what, msg in rows]))
    if any(level == "fail" for level, _, _ in rows):
        ctx.exit(1)


@click.group()
def db() -> None:
    """Schema migrations, by hand (the store also upgrades itself when opened)."""


@db.command(name="status")
@global_options
@click.pass_context
def db_status(ctx: click.Context) -> None:
    """Show the store's schema revision and the newest this version knows."""
    from ..store.engine import create
    from ..store.migrate import current_revision, known_revisions

    mirror = open_mirror(ctx, readonly=True)
    engine = create(mirror.settings.db_url, readonly=True)
    try:
        with engine.connect() as conn:
            current = current_revision(conn)
    finally:
        engine.dispose()
    head = known_revisions()[-1]
    state = "up to date" if current == head else "upgrade needed: dk-mirror db upgrade"
    click.echo(f"current: {current or '(blank)'}\nhead:    {head}\n{state}")


@db.command(name="upgrade")
@global_options
@click.pass_context
def db_upgrade(ctx: click.Context) -> None:
    """Upgrade the store's schema to the newest revision."""
    from ..store.engine import create
    from ..store.migrate import known_revisions, upgrade

    mirror = open_mirror(ctx)
    engine = create(mirror.settings.db_url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    click.echo(f"store at revision {known_revisions()[-1]}", err=True)


@click.command()
@global_options
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Mirror the sample documents (from upstream with a key, else the shipped copy), then read one offline."""
    from ..records import read_sample

    mirror = open_mirror(ctx)
    settings = mirror.settings
    names = [doc.name for doc in read_sample()]
    click.echo(f"store: {mirror.store.url}", err=True)
    source = "the copies shipped with dk-mirror"
    if not settings.offline and (settings.api_key or not settings.is_google):
        try:
            report = mirror.fetch(names)
            if report.error:
                raise report.error
            source = settings.upstream
        except MirrorError as exc:
            click.echo(f"warning: cannot fetch from upstream ({exc.message})", err=True)
    else:
        click.echo(f"no {ENV_API_KEY} set: using the sample documents", err=True)
    if source != settings.upstream:
        mirror.import_sample()
    click.echo(f"mirrored {len(names)} documents from {source}", err=True)
    result = mirror.get_documents([names[0]], offline=True)
    doc = result.documents[0]
    lines = (doc.content or "").splitlines()
    click.echo(f"\n{doc.name} ({result.served[0].source}, no network used):\n")
    click.echo("\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else ""))
    click.echo(
        "\nnext:\n"
        "  dk-mirror ls --prefix developer.chrome.com/docs/extensions\n"
        f"  dk-mirror get --offline {names[1]}\n"
        "  dk-mirror status"
    )


admin_commands = [status, import_, doctor, db, demo]
