"""The Store's local search: the text engine it chose when it opened (textindex/api.py), and
the Store's answers when there is no index.

A mixin of Store (store.py), kept apart so each file reads as one concern; it works on the
Store's own engine and names, declared below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import StoreError

if TYPE_CHECKING:
    from ..search.filters import Node
    from .textindex.api import IndexState, Snippet, TextEngine
    from .textindex.ranking import DocumentHit, LocalHit
    from .textindex.sqlite.adapter import SqliteText
    from .textindex.sqlite.index import TextIndex
    from .textindex.sqlite.indexer import Indexer


class Searching:
    """Local search on a Store."""

    # The Store's (store.py).
    where: str
    text: TextEngine

    def search_local(
        self, query: str, *, limit: int = 5, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """Best-matching chunks in the local index (`where`: a parsed upstream filter)."""
        if not self.has_search_index():
            return []
        return self.text.search(query, limit=limit, offset=offset, where=where)

    def headlines(self, query: str, shown: Sequence[str]) -> list[Snippet] | None:
        """The snippets of texts `shown` for `query` by the database's own machinery, in one
        statement (ts_headline on PostgreSQL); None on SQLite, where the caller cuts them itself
        (mirror.service.search.snippets: best_window)."""
        return self.text.headlines(query, shown)

    def rank_documents(
        self, query: str, *, limit: int = 10, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking: the best `limit` documents for `query`, best first."""
        if not self.has_search_index():
            return []
        return self.text.rank_documents(query, limit=limit, where=where)

    def check_index(self) -> IndexState:
        """How the search index compares with the documents."""
        self._need_index()
        return self.text.check()

    def rebuild_index(self) -> int:
        """Rebuild the search index from the documents (PostgreSQL: in one transaction; SQLite:
        from one snapshot); returns how many documents it holds."""
        self._need_index()
        return self.text.rebuild()

    def _need_index(self) -> None:
        if not self.has_search_index():
            raise StoreError(
                f"{self.where} has no local search index (SQLite's change log from schema "
                "revision 0013, or PostgreSQL's tsvector columns from 0011)",
                hint="run `dk-mirror db upgrade`; local search needs SQLite or PostgreSQL",
            )

    def has_search_index(self) -> bool:
        """Whether local full-text search is available (SQLite's change log for its tantivy
        index, or PostgreSQL's tsvector index built)."""
        return self.text.available()

    def text_index(self) -> TextIndex:
        """SQLite's search index, a tantivy folder beside the store file (for tests and
        benches that look inside it)."""
        return self._tantivy().index()

    def indexer(self) -> Indexer:
        """SQLite's thread that indexes each commit's changes."""
        return self._tantivy().indexer()

    def _tantivy(self) -> SqliteText:
        from .textindex.sqlite.adapter import SqliteText

        if not isinstance(self.text, SqliteText):
            raise StoreError(f"{self.where} is not an SQLite store: it has no tantivy index")
        return self.text
