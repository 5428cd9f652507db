"""dk-mirror: a caching, offline mirror of Google's Developer Knowledge API."""

__version__ = "0.1.0"
