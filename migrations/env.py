"""Alembic environment: runs on the connection dk-mirror hands over (see mirror/store/db/migrate.py)."""

from __future__ import annotations

from alembic import context

from mirror.store.schema.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run migrations through `dk-mirror db upgrade`, which supplies the connection"
    )

# render_as_batch: SQLite cannot ALTER most things; batch mode rebuilds tables instead.
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
context.run_migrations()
