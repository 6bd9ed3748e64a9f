"""Turn traces (docs/spec/behaviour.md B-34) in the assistant's own database: steps, timings,
models, sources, checks.

No message text unless explicitly enabled; never a token, ticket or key; users are hashed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg

RETENTION_DAYS = 14
SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS traces (
    turn          text NOT NULL,
    attempt       integer NOT NULL DEFAULT 1,
    user_hash     text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    outcome       text NOT NULL,
    error_code    integer,
    language      text,
    index_version text,
    models        jsonb NOT NULL DEFAULT '{}',
    steps         jsonb NOT NULL DEFAULT '[]',
    source_ids    jsonb NOT NULL DEFAULT '[]',
    checks        jsonb NOT NULL DEFAULT '{}',
    usage         jsonb NOT NULL DEFAULT '{}',
    partial_answer_chars integer NOT NULL DEFAULT 0,
    message       text,
    answer        text,
    PRIMARY KEY (turn, attempt)
);
CREATE INDEX IF NOT EXISTS traces_created_at ON traces (created_at);
-- A person's thumbs up (1) or down (-1) and optional comment on the answer.
ALTER TABLE traces ADD COLUMN IF NOT EXISTS feedback smallint;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS feedback_comment text;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS feedback_at timestamptz;
"""
FEEDBACK_COMMENT_CHARS = 1000


@dataclass
class Trace:
    """What one turn leaves behind."""

    turn: str
    user_hash: str
    attempt: int = 1
    outcome: str = "running"
    error_code: int | None = None
    language: str | None = None
    index_version: str | None = None
    models: dict[str, str] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)
    checks: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    partial_answer_chars: int = 0
    message: str | None = None  # only when ASSISTANT_TRACE_TEXT is on
    answer: str | None = None


def ensure_schema(conn: psycopg.Connection) -> None:
    """Create the traces table if missing."""
    conn.execute(SCHEMA_SQL)


def save(conn: psycopg.Connection, trace: Trace) -> None:
    """Insert or replace the trace of one attempt of a turn."""
    row = asdict(trace)
    for key in ("models", "steps", "source_ids", "checks", "usage"):
        row[key] = json.dumps(row[key], ensure_ascii=False)
    cols = ", ".join(row)
    vals = ", ".join(f"%({k})s" for k in row)
    updates = ", ".join(f"{k} = EXCLUDED.{k}" for k in row if k not in ("turn", "attempt"))
    conn.execute(f"INSERT INTO traces ({cols}) VALUES ({vals}) "
                 f"ON CONFLICT (turn, attempt) DO UPDATE SET {updates}", row)


def save_feedback(conn: psycopg.Connection, turn: str, user_hash: str, rating: int,
                  comment: str) -> bool:
    """Put the turn owner's rating (and comment) on the turn's latest trace; False if none yet.

    Only the rating and the comment the person wrote: the question and answer are stored only
    when text traces are on, as for every trace."""
    cur = conn.execute(
        "UPDATE traces SET feedback = %s, feedback_comment = %s, feedback_at = now() "
        "WHERE turn = %s AND user_hash = %s AND attempt = (SELECT max(attempt) FROM traces "
        "WHERE turn = %s)",
        (rating, comment[:FEEDBACK_COMMENT_CHARS] or None, turn, user_hash, turn))
    return cur.rowcount > 0


def feedback_counts(conn: psycopg.Connection, days: int = RETENTION_DAYS) -> dict[str, int]:
    """Thumbs up and down over the kept traces, for the metrics."""
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE feedback = 1), count(*) FILTER (WHERE feedback = -1) "
        "FROM traces WHERE created_at >= now() - make_interval(days => %s)", (days,)).fetchone()
    return {"up": int(row[0]), "down": int(row[1])} if row else {"up": 0, "down": 0}


def prune(conn: psycopg.Connection, days: int = RETENTION_DAYS) -> int:
    """Delete traces older than `days`; returns how many went."""
    cur = conn.execute("DELETE FROM traces WHERE created_at < now() - make_interval(days => %s)",
                       (days,))
    return cur.rowcount


def load(conn: psycopg.Connection, turn: str) -> list[dict[str, Any]]:
    """Every stored attempt of a turn, oldest first, as column -> value (for debugging)."""
    cur = conn.execute("SELECT * FROM traces WHERE turn = %s ORDER BY attempt", (turn,))
    names = [d.name for d in cur.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
