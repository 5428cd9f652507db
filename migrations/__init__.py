"""Alembic migrations; shipped in the wheel as `mirror.migrations`."""
