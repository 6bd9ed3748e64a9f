"""Corpus jobs: load, cut, caption, embed and swap an index in (CLI and Celery beat)."""
