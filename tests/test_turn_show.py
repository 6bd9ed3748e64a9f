"""`become-assistant turn show ID`: a turn's replay log and trace, as a person debugging it
reads them."""

from __future__ import annotations

import io

from assistant_cli import turn_cli
from assistant_cli.client import ask
from tests import harness
from tests.conftest import Stack, set_script, wait_for
from tests.wsutil import app_token


def test_the_frames_and_the_trace_are_one_line_each_and_one_block() -> None:
    """Pure: a harness turn's frames and trace, rendered."""
    r = harness.turn("How does the search work?", chunks=["Hybrid [1] ", "or not [7]."])
    out = io.StringIO()
    row = {"turn": harness.TURN, "attempt": 1, "outcome": r.trace.outcome,
           "checks": r.trace.checks}
    turn_cli.render(harness.TURN, r.frames, [row], 900, out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == f"turn {harness.TURN}"
    assert f"replay log: {len(r.frames)} frames" in lines[1]
    assert lines[2].split() == ["0", "accepted", "{}"]
    assert any(line.split()[1:3] == ["event", "retrieve"] for line in lines[2:])
    assert '"Hybrid [1] "' in text, "a token is shown as its text"
    done = next(line for line in lines if " done " in line)
    assert "citations FLAGGED" in done and "numbers ok" in done and "3 sources" in done
    assert "trace, attempt 1:" in text and '"outcome": "done"' in text


def test_nothing_found_says_so() -> None:
    out = io.StringIO()
    turn_cli.render("t-gone", [], [], 900, out)
    assert "replay log: none" in out.getvalue() and "trace: none" in out.getvalue()


def test_a_real_turn_is_shown_from_redis_and_postgresql(scripted_stack: Stack,
                                                        scripted_llm: str) -> None:
    set_script(scripted_llm, ["Shown [1]."])
    frames, done = ask(scripted_stack.base_url, app_token(scripted_stack), "How does it work?")
    assert done["type"] == "done"
    turn = frames[0]["turn"]
    out = io.StringIO()

    def traced() -> bool:
        out.seek(0)
        out.truncate()
        return turn_cli.show(scripted_stack.settings, turn, out) == 0 and "trace, attempt 1" \
            in out.getvalue()

    assert wait_for(traced, 20), out.getvalue()
    text = out.getvalue()
    assert f"replay log: {len([f for f in frames if f['type'] != 'ping'])} frames" in text
    assert '"Shown [1]."' in text and "citations ok" in text
    assert '"outcome": "done"' in text
    assert turn_cli.show(scripted_stack.settings, "no-such-turn", io.StringIO()) == 1
