"""A page as the API names it, for tests that write a few documents of their own."""

from __future__ import annotations

from mirror.models import Document


def page(
    path: str, title: str, content: str | None, *, site: str = "developer.chrome.com"
) -> Document:
    """The Document of https://SITE/PATH: its resource name, uri and data source, as the API
    gives them."""
    return Document(
        name=f"documents/{site}/{path}",
        uri=f"https://{site}/{path}",
        title=title,
        content=content,
        data_source=site,
    )
