"""`become-assistant turn show ID`: one turn's replay log (Redis) and trace (PostgreSQL), for
debugging a turn that went wrong (docs/developing.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

import psycopg
import redis

from shared import traces
from shared.config import Settings, get_settings
from shared.frames import Frame, FrameLog
from shared.redis_client import redis_client

TEXT_CHARS = 80


def _short(text: str) -> str:
    return json.dumps(text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…",
                      ensure_ascii=False)


def _verdict(check: dict[str, Any]) -> str:
    if check.get("unavailable"):
        return "unavailable"
    return "ok" if check.get("valid") else "FLAGGED"


def frame_line(fields: dict[str, Any]) -> str:
    """One frame as one line: seq, type and what matters of it."""
    kind = str(fields.get("type"))
    rest = {k: v for k, v in fields.items() if k not in ("seq", "type", "turn")}
    if kind == "token":
        detail = _short(str(rest.get("text", "")))
    elif kind == "event":
        step = rest.pop("step", "?")
        ms = rest.pop("ms", None)
        rest.pop("start_ms", None)
        detail = f"{step} {ms} ms" + (f" {json.dumps(rest, ensure_ascii=False)}" if rest else "")
    elif kind == "done":
        checks = rest.get("checks") or {}
        verdicts = ", ".join(f"{name} {_verdict(c)}" for name, c in checks.items()
                             if isinstance(c, dict))
        detail = (f"answer {_short(str(rest.get('answer', '')))}; {len(rest.get('sources') or [])}"
                  f" sources; checks: {verdicts or 'none'}; form {rest.get('answer_form')}")
    else:
        detail = json.dumps(rest, ensure_ascii=False)
    return f"{fields.get('seq', '?'):>5}  {kind:<9} {detail}"


def render(turn: str, frames: Iterable[dict[str, Any]], rows: list[dict[str, Any]] | None,
           ttl_s: int, out: TextIO) -> None:
    """Print the replay log's frames and the trace rows (None: the database was unreachable)."""
    frames = list(frames)
    out.write(f"turn {turn}\n")
    if frames:
        out.write(f"replay log: {len(frames)} frames (kept {ttl_s} s, ASSISTANT_REPLAY_TTL_S)\n")
        for fields in frames:
            out.write(frame_line(fields) + "\n")
    else:
        out.write(f"replay log: none (never started, or gone after ASSISTANT_REPLAY_TTL_S = "
                  f"{ttl_s} s)\n")
    if rows is None:
        out.write("trace: the assistant's database could not be reached (ASSISTANT_DB_DSN)\n")
    elif not rows:
        out.write("trace: none (written when an attempt ends; kept 14 days)\n")
    for row in rows or ():
        out.write(f"trace, attempt {row.get('attempt')}:\n")
        out.write(json.dumps(row, indent=2, ensure_ascii=False, default=str) + "\n")


def show(settings: Settings, turn: str, out: TextIO) -> int:
    """Read and print one turn; 1 when neither its log nor its trace is found."""
    try:
        frames: list[Frame] = FrameLog(redis_client(settings), turn,
                                       settings.replay_ttl_s).frames_after(-1)
    except redis.RedisError as exc:
        out.write(f"replay log: Redis could not be reached (ASSISTANT_REDIS_URL): "
                  f"{type(exc).__name__}\n")
        frames = []
    rows: list[dict[str, Any]] | None
    try:
        with psycopg.connect(settings.assistant_dsn, connect_timeout=3) as conn:
            rows = traces.load(conn, turn)
    except psycopg.errors.UndefinedTable:
        rows = []
    except psycopg.Error:
        rows = None
    render(turn, (f.fields() for f in frames), rows, settings.replay_ttl_s, out)
    return 0 if frames or rows else 1


def cmd_turn_show(args: argparse.Namespace) -> int:
    """`turn show ID`."""
    return show(get_settings(), args.turn, sys.stdout)


def add_parser(sub: Any) -> None:
    """The `turn` command and its `show` subcommand."""
    t = sub.add_parser("turn", help="look at one turn (debugging)")
    tsub = t.add_subparsers(dest="turn_command", required=True)
    s = tsub.add_parser("show", help="print a turn's replay log and trace")
    s.add_argument("turn", help="the turn id (the `turn` field of its frames)")
    s.set_defaults(func=cmd_turn_show)
