"""Links from a source to its public original, by the corpus manifest's URL pattern."""

from __future__ import annotations

from functools import lru_cache

from corpus_jobs.manifest import source_link_pattern, source_url


@lru_cache(maxsize=8)
def _pattern(manifest: str) -> tuple[str, str]:
    return source_link_pattern(manifest)


def link_for(manifest: str, rel: str, section: str, local: bool) -> str | None:
    """The public URL of a (non-local) source at its section, or None when the manifest has none."""
    if local:
        return None
    pattern, ref = _pattern(manifest)
    return source_url(pattern, ref, rel, section)
