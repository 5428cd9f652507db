"""Commands about the store itself: status, import, doctor, db, and the newcomer's demo."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .. import __version__
from ..config import ENV_API_KEY
from ..errors import MirrorError, SchemaError, StoreError
from ..policy import Mode
from ..render import units
from ..service import Mirror
from . import render
from .common import global_options, json_option, max_document_option, open_mirror

if TYPE_CHECKING:
    from ..service import ImportFileReport

# Skipped names listed in text output; --json lists every one.
SHOW_SKIPPED = 10


@click.command()
@json_option
@global_options
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts, bytes, freshness, and where the store is."""
    mirror = open_mirror(ctx, readonly=True)
    health = mirror.health()
    if as_json:
        click.echo(render.to_json(health.to_json()))
        return
    stats = health.stats
    now = mirror.clock()
    if stats.newest_fetch is None or stats.oldest_fetch is None:
        fetched = "nothing fetched yet"
    else:
        newest, oldest = now - stats.newest_fetch, now - stats.oldest_fetch
        fetched = f"newest {render.age(newest)} ago, oldest {render.age(oldest)} ago"
    click.echo(
        render.key_values(
            {
                "store": health.store.url,
                "documents": stats.describe(),
                "content": units.size(stats.content_bytes),
                "fetched": fetched,
                "upstream": f"{health.upstream} over {health.transport}"
                + (" (offline mode)" if health.offline else ""),
            }
        )
    )
    if stats.by_data_source:
        click.echo("by data source:")
        rows = [(f"  {src}", str(n)) for src, n in stats.by_data_source.items()]
        click.echo(render.table(rows))


@click.command(name="import")
@click.argument(
    "files", nargs=-1, metavar="[FILE]...", type=click.Path(path_type=Path, dir_okay=False)
)
@click.option("--sample", is_flag=True, help="Import the sample documents shipped with dk-mirror.")
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace stored copies even when they have a newer updateTime than the file's.",
)
@max_document_option
@json_option
@global_options
@click.pass_context
def import_(
    ctx: click.Context, files: tuple[Path, ...], sample: bool, overwrite: bool, as_json: bool
) -> None:
    """Import Document records from FILE.jsonl[.gz] (one JSON object per line), all or nothing.
    Several files are one import: all of them or none.

    A stored copy with a newer updateTime (or with one, when the record has none) is kept
    and reported as skipped, unless --overwrite. A name given more than once is stored once:
    its last copy wins.
    """
    if bool(files) == sample:
        raise click.UsageError("give either FILE... or --sample")
    from .embedding import embedding_shown

    mirror = open_mirror(ctx)
    # The report, then the embedding's summary line (its bar is finished by then).
    try:
        with embedding_shown(mirror):
            if sample:
                report = mirror.import_sample(overwrite=overwrite)
            else:
                report = mirror.import_files(files, overwrite=overwrite)
            _said(report, as_json)
    except KeyboardInterrupt as stop:
        from .embedding import interrupted_note
        from .main import EXIT_INTERRUPTED

        # Not the group's bare "interrupted": whether anything was imported is the question.
        # A Ctrl-C may land just after the commit, so this says what holds either way.
        click.echo(
            interrupted_note(stop)
            or "interrupted: an import is all or nothing, so the store holds all of the "
            "records or none of them; run the same command again (what it holds already is "
            "compared, not written twice)",
            err=True,
        )
        ctx.exit(EXIT_INTERRUPTED)


def _said(report: ImportFileReport, as_json: bool) -> None:
    """What `import` prints of its report."""
    if as_json:
        click.echo(render.to_json(report.to_json()))
        return
    repeats = ""
    if report.duplicates:
        repeats = (
            f" ({report.duplicates} duplicate record(s) of a name seen before: last copy kept)"
        )
    counts = f"{report.new} new, {report.changed} changed, {report.unchanged} unchanged"
    click.echo(
        f"imported {report.imported} documents ({counts}) into {report.store}{repeats}", err=True
    )
    if report.skipped:
        click.echo(
            f"kept {len(report.skipped)} newer stored copies (--overwrite replaces them):",
            err=True,
        )
        for name in report.skipped[:SHOW_SKIPPED]:
            click.echo(f"  kept newer: {name}", err=True)
        if len(report.skipped) > SHOW_SKIPPED:
            click.echo(f"  ... and {len(report.skipped) - SHOW_SKIPPED} more (--json lists all)",
                       err=True)  # fmt: skip


# The WAL-reset bug: two connections writing or checkpointing the same WAL database at the same
# moment can corrupt it. Affected: 3.7.0 (WAL's first release) up to 3.51.2; fixed in 3.51.3
# (2026-03-13), 3.52.0 and later, with fixes backported to 3.44.6 and 3.50.7.
# Sources: https://www.sqlite.org/wal.html#walresetbug and
# https://sqlite.org/releaselog/3_51_3.html ("Fix the WAL-reset database corruption bug").
WAL_RESET_BUG = ((3, 7, 0), (3, 51, 3))
WAL_RESET_BACKPORTS = ((3, 44, 6), (3, 50, 7))


def wal_reset_bug(version: str) -> bool:
    """Whether SQLite `version` (e.g. "3.40.1") has the WAL-reset corruption bug."""
    try:
        parts = tuple(int(p) for p in version.split(".")[:3])
    except ValueError:
        return False  # not a version we can judge; say nothing rather than guess
    release = (*parts, 0, 0, 0)[:3]
    first, fixed = WAL_RESET_BUG
    if not first <= release < fixed:
        return False
    return not any(release[:2] == b[:2] and release >= b for b in WAL_RESET_BACKPORTS)


def _checks(mirror: Mirror) -> list[tuple[str, str, str]]:
    """(level, topic, message) rows for `doctor`: level is ok, warn or fail."""
    settings = mirror.settings
    rows = [("ok", "dk-mirror", f"{__version__} on Python {sys.version.split()[0]}")]
    version = sqlite3.sqlite_version
    rows.append(("ok", "sqlite", f"SQLite {version}"))
    if wal_reset_bug(version):
        rows.append(
            (
                "warn",
                "sqlite",
                f"SQLite {version} has the WAL-reset bug, which can corrupt a store written by "
                "two processes at once (https://www.sqlite.org/wal.html#walresetbug): upgrade "
                "to SQLite 3.51.3 or later (3.50.7+, 3.44.6+), or run one writer at a time",
            )
        )
    rows.extend(_store_rows(mirror))
    rows.append(_semantic_row(mirror))
    rows.append(_key_row(mirror))
    if settings.offline:
        rows.append(("ok", "network", "offline mode: only the store is used (upstream not probed)"))
    elif settings.is_google and not settings.api_key:
        rows.append(("warn", "upstream", f"{settings.upstream} not probed: no API key"))
    else:
        report = mirror.probe_upstream()
        where = f"{settings.upstream} over {settings.transport}"
        detail = f"{where}: {report.verdict}: {report.detail}"
        if report.hint:
            detail += f" (hint: {report.hint})"
        rows.append(("ok" if report.ok else "fail", "upstream", detail))
    return rows


def _row_text(exc: MirrorError) -> str:
    """An error as one row's detail: its hint in parentheses, not on a line of its own (the
    table escapes a newline inside a cell, which printed as `\\x0a  hint:`)."""
    return f"{exc.message} (hint: {exc.hint})" if exc.hint else exc.message


def _store_rows(mirror: Mirror) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    try:
        health = mirror.health(integrity=True)
    except SchemaError as exc:
        rows.append(("warn", "schema", _row_text(exc)))
        return rows
    except StoreError as exc:
        rows.append(("fail", "store", _row_text(exc)))
        return rows
    store = health.store
    rows.append(("ok", "store", store.url))
    rows.append(_search_row(store.dialect, store.search_index))
    level = "ok" if store.revision == store.expected_revision else "warn"
    rows.append(
        (level, "schema", f"revision {store.revision} (expected {store.expected_revision})")
    )
    if store.immutable:
        # Immutable reads ignore journals, so the pragma's answer says nothing of the file.
        rows.append(("ok", "journal", "read-only folder: opened immutable, nothing can write"))
    elif store.journal_mode is not None:
        level = "ok" if store.journal_mode == "wal" else "warn"
        rows.append((level, "journal", f"journal_mode={store.journal_mode} (wal expected)"))
    if store.integrity:
        rows.append(("fail", "integrity", "; ".join(store.integrity[:5])))
    else:
        rows.append(("ok", "integrity", "quick_check ok"))
    return rows


def _search_row(dialect: str, indexed: bool) -> tuple[str, str, str]:
    """Which machinery local search runs on in this store."""
    if not indexed:
        return ("warn", "search", "no local search index: run `dk-mirror db upgrade`")
    if dialect == "postgresql":
        return (
            "ok",
            "search",
            "PostgreSQL full-text search: tsvector (english stemming), GIN index, ts_rank",
        )
    return (
        "ok",
        "search",
        "tantivy index beside the SQLite file (English stemming, BM25)",
    )


def _semantic_row(mirror: Mirror) -> tuple[str, str, str]:
    try:
        level, message = mirror.semantic_status().describe()
    except MirrorError as exc:  # a store at another schema: the schema row says what to do
        return ("warn", "semantic", f"not checked: {exc.message}")
    return (level, "semantic", message)


def _key_row(mirror: Mirror) -> tuple[str, str, str]:
    settings = mirror.settings
    if settings.api_key:
        return ("ok", "api key", f"{ENV_API_KEY} is set")
    if settings.offline:
        return ("ok", "api key", f"{ENV_API_KEY} is not set (offline mode: not needed)")
    if settings.is_google:
        return (
            "warn",
            "api key",
            f"{ENV_API_KEY} is not set: only cached documents can be served "
            "(create a key: gcloud services api-keys create)",
        )
    return ("ok", "api key", f"{ENV_API_KEY} is not set ({settings.upstream} may not need one)")


@click.command()
@json_option
@global_options
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check SQLite, the store, the API key, and (unless --offline) one real upstream request."""
    mirror = open_mirror(ctx, upgrade=False, readonly=True)
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
    """Schema migrations by hand (stores also upgrade when opened), and copying a store."""


@db.command(name="status")
@json_option
@global_options
@click.pass_context
def db_status(ctx: click.Context, as_json: bool) -> None:
    """Show the store's schema revision and the newest this version knows."""
    status = open_mirror(ctx, readonly=True).schema_status()
    if as_json:
        click.echo(render.to_json(status.to_json()))
        return
    state = "up to date" if status.up_to_date else "upgrade needed: dk-mirror db upgrade"
    click.echo(f"current: {status.current or '(blank)'}\nhead:    {status.head}\n{state}")


@db.command(name="upgrade")
@global_options
@click.pass_context
def db_upgrade(ctx: click.Context) -> None:
    """Upgrade the store's schema to the newest revision."""
    status = open_mirror(ctx).upgrade_schema()
    click.echo(f"store at revision {status.current}", err=True)


@db.command(name="copy")
@click.argument("destination", metavar="DEST")
@json_option
@global_options
@click.pass_context
def db_copy(ctx: click.Context, destination: str, as_json: bool) -> None:
    """Copy the store (every document and version) into the empty store DEST, e.g. PostgreSQL."""
    report = open_mirror(ctx).copy_store(destination)
    if as_json:
        click.echo(render.to_json(report.to_json()))
        return
    click.echo(
        f"copied {report.documents} documents and {report.versions} versions "
        f"into {report.destination}\nsnapshot root {report.root} (the same in both)"
    )


@click.command()
@global_options
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Mirror the sample documents (from upstream with a key, else the shipped copy), then read one offline."""
    from ..records import read_sample
    from .embedding import embedding_shown

    mirror = open_mirror(ctx)
    settings = mirror.settings
    names = [doc.name for doc in read_sample()]
    click.echo(f"store: {mirror.store_url}", err=True)
    source = "the copies shipped with dk-mirror"
    if not settings.offline and (settings.api_key or not settings.is_google):
        try:
            report = mirror.fetch(names)
            if report.error:
                raise report.error
            source = settings.upstream
        except MirrorError as exc:
            click.echo(
                f"warning: cannot fetch from upstream ({render.clean(exc.message)})", err=True
            )
    else:
        click.echo(f"no {ENV_API_KEY} set: using the sample documents", err=True)
    if source != settings.upstream:
        with embedding_shown(mirror):
            mirror.import_sample()
    click.echo(f"mirrored {len(names)} documents from {source}", err=True)
    result = mirror.get_documents([names[0]], Mode(offline=True))
    doc = result.documents[0]
    lines = (doc.content or "").splitlines()
    click.echo(f"\n{doc.name} ({result.served[0].source}, no network used):\n")
    excerpt = "\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")
    click.echo(render.clean(excerpt, multiline=True))
    click.echo(
        "\nnext:\n"
        "  dk-mirror ls --prefix developer.chrome.com/docs/extensions\n"
        f"  dk-mirror get --offline {names[1]}\n"
        "  dk-mirror status"
    )


admin_commands = [status, import_, doctor, db, demo]
