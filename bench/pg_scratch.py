"""A scratch PostgreSQL database for a bench run: created on the server a URL names, dropped
at the end, so a bench never writes into a database someone uses.

The server comes from --pg-url or $DK_MIRROR_BENCH_PG_URL (postgresql://USER@HOST:PORT/DB,
a role allowed to CREATE DATABASE); without one, the PostgreSQL tiers are left out.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

PG_URL_ENV = "DK_MIRROR_BENCH_PG_URL"


def add_pg_option(parser: argparse.ArgumentParser) -> None:
    """Add --pg-url URL: a PostgreSQL server to run the PostgreSQL tiers on."""
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(PG_URL_ENV),
        help=f"a PostgreSQL server for the PostgreSQL tiers (default: ${PG_URL_ENV}); "
        "a scratch database is created there and dropped at the end",
    )


@contextmanager
def scratch_database(server_url: str, label: str) -> Iterator[str]:
    """The URL of a new, empty database on `server_url`'s server, dropped on exit."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    name = f"dkm_bench_{label}_{os.getpid()}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield url.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
