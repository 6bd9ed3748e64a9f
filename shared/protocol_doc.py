"""docs/protocol.md, written from the frame catalogue (shared/frame_types.py) and the checks
registry (shared/checks.py).

`python -m shared.protocol_doc` writes it; `--check` exits 1 when the committed file differs
(tests/test_protocol_doc.py checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

from shared.checks import CHECKS
from shared.frame_types import CATALOGUE, DONE_FIELDS
from shared.generated_doc import write_or_check

DOC = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"

HEADER = """\
# Protocol

<!-- Written by `python -m shared.protocol_doc` from shared/frame_types.py (the frames) and
     shared/checks.py (the checks): edit a declaration there and run the command, never this
     file by hand. -->

## How a turn flows

1. The client sends `POST /api/v1/assistant/tickets` with `Authorization: Bearer <app JWT>`
   (HS256, `sub`, `exp`, `type: "access"`, signed with `ASSISTANT_APP_JWT_SECRET`, as the BeCoMe
   app signs it) and gets `{"ticket", "expires_in"}`: single-use, 30 seconds.
2. It opens `ws://…/api/v1/assistant/ws?ticket=…`. The ticket and the Origin (against
   `ASSISTANT_ALLOWED_ORIGINS`; clients that send no Origin, like the CLI, need only the ticket)
   are checked in a before-request hook, before the 101 response.
3. It sends `{"type": "ask", "message", "history", "project_id"}`. The web process subscribes to
   the turn's Redis channel (one shared subscriber per process) and waits for Redis to confirm,
   logs `{"type": "accepted", "turn", "seq": 0}`, then enqueues the Celery task `turn.answer` by
   name. The web tier never imports the pipeline or a model client.
4. The worker runs the steps (language, hybrid retrieval, prompt, one streamed model call,
   citation check) and publishes every frame with the next `seq` to the turn's channel and to
   its replay log (a Redis Stream kept 15 minutes). `event` frames carry each step's timing.
5. The web process relays frames in `seq` order, filling any gap from the replay log, and sends
   `{"type": "ping"}` while the stream is silent. The turn ends with exactly one `done` (answer,
   sources, checks, usage, timing, index version) or `error` (code, plain message) frame.

[how-it-works.md](how-it-works.md) describes the same path for users; the default index includes it, so
the assistant can answer "how do you work?".

More of the protocol (v1, extended, never broken):

- `{"type": "resume", "turn", "after": seq}` on a new socket sends the rest of a turn in order,
  without duplicates, then continues live; `{"type": "cancel", "turn"}` stops it (the turn
  ends with an error frame, code 499). A closed socket does not stop a turn.
- The same events over SSE: `POST /api/v1/assistant/chat/stream` (the ask frame's fields as
  JSON, `Authorization: Bearer`), and `GET /api/v1/assistant/turns/<turn>/events` honouring
  `Last-Event-ID`. Each event's `id:` is its `seq`. `POST /api/v1/assistant/turns/<turn>/cancel`
  (`Authorization: Bearer`, answers 202, or 404 for a turn that is not the caller's) stops a
  turn as the cancel frame does: its stream ends with the error frame 499.
- The socket serves its user only until the app token it was opened with expires: then it
  closes with code 4401 and the reason "Your sign-in has expired. Get a new token and
  reconnect." (a turn in flight keeps running; resume it on a new socket with a fresh token).
  A ticket for a project turn (`{"project_id"}` in the ticket request's body) is issued only
  after the app confirms the token (`GET /api/v1/users/me`), so a signed-out token gets none.
- A `restart` frame means the worker running the turn died and the turn runs again: drop the
  partial text. Time limits: 90 s to the first token, 180 s for the whole answer (worker); the
  web tier ends a turn nobody runs any more with an error frame.

Delivery semantics of a turn: Celery delivers each attempt at most once (acks on receipt). The
worker running a turn holds a 6-second lease in Redis, renewed every 2 seconds; the web process
following the turn checks it whenever the stream is silent for a second. A turn whose lease
expired is re-run once (attempt 2, idempotent by turn id and attempt); if that fails too, or no
worker takes the turn within the first-token limit, the turn ends with an error frame. Never
silence. The worker runs Celery's threads pool, where Celery's own time limits are not
enforced, so the turn enforces its limits in our code: the model's stream is read in a thread
of its own and the turn stops waiting at the first-token limit (no token yet) or the answer
limit, even when the server keeps the connection busy without sending a token; the other model
calls (rewrite, translation, embeddings) have read timeouts, and the first-token limit is checked
between steps. A turn task expires, unrun, once the first-token limit has passed since it was
queued, so a backlog never calls the model for turns nobody waits for. Prefetch is 1.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The whole of docs/protocol.md."""
    lines = [HEADER, "## Frames the server sends", "",
             "Every frame is one JSON object with its `type` first. A logged frame is numbered: "
             "`seq` (0 for `accepted`, then one more per frame, no gaps) and `turn` come with "
             "it, and a resume or an SSE `Last-Event-ID` replays it. A turn ends with exactly "
             "one terminal frame.", "",
             "| type | sent by | logged | ends the turn | meaning |", "|---|---|---|---|---|"]
    for t in CATALOGUE:
        lines.append(f"| `{t.name}` | {t.sender} | {'yes' if t.logged else 'no'} | "
                     f"{'yes' if t.terminal else 'no'} | {_cell(t.meaning)} |")
    for t in CATALOGUE:
        if not t.fields:
            continue
        lines += ["", f"### `{t.name}`", "", "| field | meaning |", "|---|---|"]
        lines += [f"| `{name}` | {_cell(meaning)} |" for name, meaning in t.fields.items()]
    lines += ["", "### The `done` frame's fields", "", "| field | meaning |", "|---|---|"]
    lines += [f"| `{f.name}` | {_cell(f.metadata['meaning'])} |" for f in DONE_FIELDS]
    lines += ["", "### The checks block", "",
              "`done.checks` holds one block per check that ran, each with `valid`: true, "
              "false (the answer is flagged, never changed), or null with "
              "`\"unavailable\": true` when the check could not run (neither passed nor "
              "failed). Checks that run on every answer are marked.", "",
              "| check | every answer | meaning | fields besides `valid` |", "|---|---|---|---|"]
    for c in CHECKS:
        fields = "; ".join(f"`{k}`: {v}" for k, v in c.fields.items())
        lines.append(f"| `{c.name}` | {'yes' if c.always else 'no'} | {_cell(c.meaning)} | "
                     f"{_cell(fields)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write docs/protocol.md, or with --check say whether it is up to date."""
    return write_or_check(DOC, render, "shared.protocol_doc", argv)


if __name__ == "__main__":
    sys.exit(main())
