"""Lore: the corpus admins feed (Markdown, text, PDF), its index (Chroma + BM25), and hybrid search with citations."""
