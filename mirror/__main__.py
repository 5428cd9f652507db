"""`python -m mirror` runs the dk-mirror command."""

from .cli.main import main

main()
