"""Pure crawl decisions: links in Markdown, scopes, the frontier's rules. No I/O here."""
