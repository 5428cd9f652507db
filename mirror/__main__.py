"""`python -m mirror` runs the dk-mirror command."""

from mirror.cli import main

main()
