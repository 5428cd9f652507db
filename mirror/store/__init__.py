"""The local store: the only package that imports SQLAlchemy (and, with migrations/, Alembic)."""
