"""Captions for indexing (docs/spec/behaviour.md B-8): from the manifest's captions file, then the
caption cache, then the caption role, then none; cached by content hash, so nothing is captioned
twice."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources

import openai
import psycopg

from corpus_jobs.caption_file import CaptionFile
from corpus_jobs.loaders import LoadedPiece
from shared.config import ModelRole
from shared.errors import ModelError
from shared.models import client_for

log = logging.getLogger(__name__)
CAPTION_SCHEMA = """
CREATE TABLE IF NOT EXISTS caption_cache (
    content_hash text NOT NULL,
    model        text NOT NULL,
    lang         text NOT NULL DEFAULT 'en',
    caption      text NOT NULL,
    PRIMARY KEY (content_hash, model, lang)
);
"""
# A cache made before captions had a language holds English ones: they keep that meaning.
_ADD_LANG = """
ALTER TABLE caption_cache ADD COLUMN lang text NOT NULL DEFAULT 'en';
ALTER TABLE caption_cache DROP CONSTRAINT caption_cache_pkey;
ALTER TABLE caption_cache ADD PRIMARY KEY (content_hash, model, lang);
"""
MAX_CAPTION_CHARS = 400
PROMPTS = {"en": "caption.txt", "cs": "caption_cs.txt"}
# Where a passage's captions came from, in the order the build looks.
ORIGINS = ("file", "cache", "role", "none")


def caption_key(piece: LoadedPiece) -> str:
    """The cache key of a piece: what the caption is written from."""
    return hashlib.sha256(f"{piece.title}\0{piece.section}\0{piece.text}".encode()).hexdigest()


def ensure_cache(conn: psycopg.Connection) -> None:
    """Create the caption cache, or give an older one its language column."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(7342)")
        conn.execute(CAPTION_SCHEMA)
        has_lang = conn.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'caption_cache' "
            "AND column_name = 'lang' AND table_schema = current_schema()").fetchone()
        if not has_lang:
            for statement in filter(None, (s.strip() for s in _ADD_LANG.split(";"))):
                conn.execute(statement)


def write_caption(role: ModelRole, piece: LoadedPiece, lang: str = "en") -> str:
    """One caption in `lang` from the caption role at temperature 0 (one line, bounded)."""
    template = resources.files("corpus_jobs").joinpath("prompts", PROMPTS[lang]).read_text(
        encoding="utf-8")
    prompt = template.format(title=piece.title, section=piece.section, text=piece.text)
    try:
        resp = client_for(role, 300).chat.completions.create(
            model=role.model, temperature=0, max_tokens=120,
            messages=[{"role": "user", "content": prompt}])
    except openai.OpenAIError as exc:
        raise ModelError(f"caption call failed: {type(exc).__name__}") from exc
    text = " ".join((resp.choices[0].message.content or "").split())
    return text[:MAX_CAPTION_CHARS]


def cached(conn: psycopg.Connection, keys: Sequence[str], prefer: str = ""
           ) -> dict[tuple[str, str], str]:
    """Cached captions by (key, lang): the `prefer`red model's first, then any other's (by
    model name, so the choice is the same on every build)."""
    rows = conn.execute(
        "SELECT content_hash, lang, caption FROM caption_cache WHERE content_hash = ANY(%s) "
        "ORDER BY (model = %s) DESC, model", (list(keys), prefer)).fetchall()
    out: dict[tuple[str, str], str] = {}
    for key, lang, caption in rows:
        out.setdefault((key, lang), caption)
    return out


def store(conn: psycopg.Connection, key: str, model: str, lang: str, caption: str) -> None:
    """Keep one caption in the cache (an existing one for the same key, model and language
    is replaced: an import brings the file's current wording)."""
    conn.execute("INSERT INTO caption_cache (content_hash, model, lang, caption) "
                 "VALUES (%s, %s, %s, %s) ON CONFLICT (content_hash, model, lang) "
                 "DO UPDATE SET caption = EXCLUDED.caption", (key, model, lang, caption))


@dataclass
class Plan:
    """Each piece's captions by caption_key, where they came from, and what the file lacked."""

    captions: dict[str, dict[str, str]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    # Pieces the file has an entry for at the same place (source, section), written for
    # another text: the passage changed since, and gets no caption from the file.
    changed: int = 0
    # File entries whose key no piece has (the passage changed or is gone).
    stale: int = 0

    def missing(self, languages: Sequence[str]) -> list[str]:
        """Keys of pieces lacking a caption in one of `languages`."""
        return [k for k, caps in self.captions.items() if any(x not in caps for x in languages)]

    def counts(self) -> dict[str, int]:
        """How many pieces' captions came from each place, and the file's changed / stale."""
        c = Counter(self.origin.values())
        return {**{o: c.get(o, 0) for o in ORIGINS}, "changed": self.changed, "stale": self.stale}

    def text(self, key: str, languages: Sequence[str]) -> str:
        """A piece's captions in `languages`, one line each, for its index text."""
        caps = self.captions.get(key, {})
        return "\n".join(caps[x] for x in languages if x in caps)

    def digest(self, languages: Sequence[str]) -> str:
        """A hash of every caption the index will hold (part of the index version)."""
        h = hashlib.sha256(",".join(languages).encode())
        for key in sorted(self.captions):
            h.update(f"\0{key}\0{self.text(key, languages)}".encode())
        return h.hexdigest()


def plan(conn: psycopg.Connection | None, pieces: Sequence[LoadedPiece],
         languages: Sequence[str], file: CaptionFile | None, prefer: str = "") -> Plan:
    """Captions from the file, then the cache (no model call); `fill` adds the role's."""
    p = Plan()
    keys = {caption_key(piece): piece for piece in pieces}
    if file is not None:
        p.stale = sum(1 for k in file.entries if k not in keys)
    rows = cached(conn, list(keys), prefer) if conn is not None and languages else {}
    for key, piece in keys.items():
        caps: dict[str, str] = {}
        entry = file.entries.get(key) if file is not None else None
        if entry is not None:
            caps = {x: entry.captions[x] for x in languages if x in entry.captions}
        elif file is not None and file.at(piece.source, piece.section):
            p.changed += 1
        origin = "file" if caps else "none"
        for x in languages:
            if x not in caps and (key, x) in rows:
                caps[x] = rows[(key, x)]
                origin = "cache"  # a piece counts where the build last had to look
        p.captions[key] = caps
        p.origin[key] = origin
    return p


def fill(conn: psycopg.Connection, role: ModelRole, pieces: Sequence[LoadedPiece], p: Plan,
         languages: Sequence[str], progress: Callable[[int, int], None] | None = None) -> int:
    """Write the captions `p` lacks with the caption role; each is kept in the cache at once,
    so a killed run resumes without captioning anything twice. Returns the calls made."""
    keys = {caption_key(piece): piece for piece in pieces}
    todo = [(k, x) for k in p.missing(languages) for x in languages if x not in p.captions[k]]
    for n, (key, lang) in enumerate(todo, start=1):
        caption = write_caption(role, keys[key], lang)
        store(conn, key, role.model, lang, caption)
        p.captions[key][lang] = caption
        p.origin[key] = "role"
        if progress:
            progress(n, len(todo))
    return len(todo)
