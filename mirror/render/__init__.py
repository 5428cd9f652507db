"""Formats shared by every shell: what the terminal, the web pages and exports show alike."""
