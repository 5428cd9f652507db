"""The tables, as SQLAlchemy Core metadata (tables.py, and one module per group of tables)."""
