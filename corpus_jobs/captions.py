"""Captions for indexing (B-8): written once by the caption role, cached by content hash."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from importlib import resources

import openai
import psycopg

from corpus_jobs.loaders import LoadedPiece
from shared.config import ModelRole
from shared.errors import ModelError
from shared.models import client_for

log = logging.getLogger(__name__)
CAPTION_SCHEMA = """
CREATE TABLE IF NOT EXISTS caption_cache (
    content_hash text NOT NULL,
    model        text NOT NULL,
    caption      text NOT NULL,
    PRIMARY KEY (content_hash, model)
);
"""
MAX_CAPTION_CHARS = 400


def caption_key(piece: LoadedPiece) -> str:
    """The cache key of a piece: what the caption is written from."""
    return hashlib.sha256(f"{piece.title}\0{piece.section}\0{piece.text}".encode()).hexdigest()


def write_caption(role: ModelRole, piece: LoadedPiece) -> str:
    """One caption from the caption role at temperature 0 (one line, bounded length)."""
    template = resources.files("corpus_jobs").joinpath("prompts", "caption.txt").read_text(
        encoding="utf-8")
    prompt = template.format(title=piece.title, section=piece.section, text=piece.text)
    try:
        resp = client_for(role, 300).chat.completions.create(
            model=role.model, temperature=0, max_tokens=80,
            messages=[{"role": "user", "content": prompt}])
    except openai.OpenAIError as exc:
        raise ModelError(f"caption call failed: {type(exc).__name__}") from exc
    text = " ".join((resp.choices[0].message.content or "").split())
    return text[:MAX_CAPTION_CHARS]


def captions_for(conn: psycopg.Connection, role: ModelRole, pieces: Sequence[LoadedPiece],
                 progress: Callable[[int, int], None] | None = None) -> dict[str, str]:
    """Captions by caption_key; only pieces never captioned by this model call the model."""
    conn.execute(CAPTION_SCHEMA)
    keys = {caption_key(p): p for p in pieces}
    rows = conn.execute("SELECT content_hash, caption FROM caption_cache "
                        "WHERE model = %s AND content_hash = ANY(%s)",
                        (role.model, list(keys))).fetchall()
    have = {h: c for h, c in rows}
    missing = [k for k in keys if k not in have]
    for n, key in enumerate(missing, start=1):
        caption = write_caption(role, keys[key])
        # Committed one by one: a killed build resumes without captioning anything twice.
        conn.execute("INSERT INTO caption_cache VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                     (key, role.model, caption))
        have[key] = caption
        if progress:
            progress(n, len(missing))
    return have
