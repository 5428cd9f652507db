"""`python -m mirror` runs the dk-mirror command."""

from .cli.start import main

main()
