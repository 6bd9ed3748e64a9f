"""The prompt-echo and repeat checks on real turns (issue 24, item 3): the scripted model writes
what the tiny model wrote, the worker's checks flag it in the done frame and the trace, and the
prompt the model was sent holds no example sentence."""

from __future__ import annotations

import psycopg

from assistant_cli.client import ask
from tests.conftest import Stack, set_script, wait_for
from tests.test_panel_browser import last_stream_request
from tests.wsutil import app_token

FIRST = ("The assistant searches the documentation by meaning and by words, and the answer "
         "cites the passages it used [1].")


def trace_checks(stack: Stack, turn: str) -> dict:  # type: ignore[type-arg]
    """The checks the turn's trace recorded (written just after the done frame)."""
    found: list[dict] = []  # type: ignore[type-arg]

    def read() -> bool:
        with psycopg.connect(stack.settings.assistant_dsn) as conn:
            row = conn.execute("SELECT checks FROM traces WHERE turn = %s", (turn,)).fetchone()
        if row is not None:
            found.append(row[0])
        return row is not None

    assert wait_for(read, 20), "no trace for the turn"
    return found[0]


def test_a_markup_echo_is_flagged_in_the_done_frame_and_the_trace(
        scripted_stack: Stack, scripted_llm: str) -> None:
    set_script(scripted_llm, ["<passage>\nThe search ", "ranks passages.\n</passage> Cite only ",
                              "numbers of passages given below."])
    frames, done = ask(scripted_stack.base_url, app_token(scripted_stack),
                       "How does the search work?")
    assert done["type"] == "done", done
    echo = done["checks"]["prompt_echo"]
    assert echo["valid"] is False
    assert echo["markup"] == ["<passage>", "</passage>"]
    assert echo["instructions"] == ["cite only numbers of passages given below"]
    assert done["checks"]["repeat"]["valid"] is True
    step = next(s for s in done["timing"]["steps"] if s["step"] == "checks")
    assert step["prompt_echo_valid"] is False and step["repeat_valid"] is True
    turn = frames[0]["turn"]
    assert trace_checks(scripted_stack, turn)["prompt_echo"]["valid"] is False
    # What the model was sent: the rules, no sample sentence to copy.
    body = last_stream_request(scripted_llm)
    sent = "\n".join(m["content"] for m in body["messages"])
    assert "Ground rules:" in sent and "for example" not in sent.lower()
    assert "The search uses BM25" not in sent


def test_an_answer_copied_from_the_last_one_is_flagged_as_a_repeat(
        scripted_stack: Stack, scripted_llm: str) -> None:
    history = [{"role": "user", "content": "How does the search work?"},
               {"role": "assistant", "content": FIRST}]
    set_script(scripted_llm, [FIRST])
    frames, done = ask(scripted_stack.base_url, app_token(scripted_stack),
                       "What is the capital of France?", history=history)
    assert done["type"] == "done", done
    assert done["checks"]["repeat"] == {"valid": False, "earlier": 1, "similarity": 1.0}
    assert done["checks"]["prompt_echo"]["valid"] is True
    assert trace_checks(scripted_stack, frames[0]["turn"])["repeat"]["valid"] is False
    # The same question again may rightly get the same answer.
    set_script(scripted_llm, [FIRST])
    _, again = ask(scripted_stack.base_url, app_token(scripted_stack),
                   "How does the search work?", history=history)
    assert again["checks"]["repeat"]["valid"] is True
    # Every source carries its weak-match label.
    assert all(isinstance(s["weak"], bool) for s in done["sources"])
