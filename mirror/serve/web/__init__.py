"""The offline docs browser of `dk-mirror serve`: routes, pages, Markdown, links, sanitising."""
