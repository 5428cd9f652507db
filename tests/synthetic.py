"""Made-up Documents for runs that need many and no corpus: here, apart from the pytest
fixtures, so bench/ (run on a plain install, without pytest) can use them too."""

from __future__ import annotations

from typing import Any


def synthetic_documents(count: int, host: str = "docs.example.dev") -> list[dict[str, Any]]:
    """`count` made-up Documents of varied size and script (ASCII, accents, CJK, emoji), the
    same every call: for runs that need many documents and no corpus."""
    words = ["mirror", "caché", "批处理", "naïve", "🙂", "quota", "Ünïcode", "retry", "—", "\\n"]
    docs = []
    for i in range(count):
        body = " ".join(words[(i * 7 + j) % len(words)] for j in range(20 + (i * 37) % 400))
        docs.append(
            {
                "name": f"documents/{host}/guide/page-{i:05d}",
                "title": f"Page {i} — {words[i % len(words)]}",
                "description": f"Synthetic page {i}",
                "content": f"# Page {i}\n\n{body}\n",
            }
        )
    return docs
