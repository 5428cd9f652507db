"""Formats shared by every shell: what the terminal, the web pages and exports show alike,
and the Markdown structure they all read the same way (code fences)."""
