"""The `dk-mirror` command line: one module per command family; `main.py` is the entry point."""
