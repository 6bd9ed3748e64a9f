"""`eval answers` over a question set larger than the stack's per-address quota: a limit's
refusal (429 with retry_after) is waited out, anything else stops the run (pure code: the
client's ticket step and the eval's asker, the HTTP call and the sleep replaced)."""

from __future__ import annotations

from typing import Any

import pytest

from assistant_cli import client, eval_cli
from shared.errors import Unavailable

LIMITED = {"error": {"code": 429, "retry_after": 31, "message":
                     "Too many requests from your address (20 in the last minute)."}}


def test_a_refused_ticket_carries_when_to_try_again(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([(429, LIMITED), (403, {"error": {"code": 403, "message": "no"}})])
    monkeypatch.setattr(client, "http_json", lambda *a, **k: next(answers))
    with pytest.raises(client.ClientError) as limited:
        client.get_ticket("http://127.0.0.1:9", "token")
    assert (limited.value.code, limited.value.retry_after) == (429, 31)
    assert "20 in the last minute" in str(limited.value)
    with pytest.raises(client.ClientError) as refused:
        client.get_ticket("http://127.0.0.1:9", "token")
    assert (refused.value.code, refused.value.retry_after) == (403, None)


def test_the_eval_waits_out_a_limit_and_stops_on_anything_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    done = [{"type": "done", "answer": "ok"}]
    outcomes: list[Any] = [client.ClientError("limit", 429, 5),
                           client.ClientError("limit", 429, 5), (done, done[0])]

    def fake_ask(*_a: Any, **_k: Any) -> Any:
        got = outcomes.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(eval_cli.client, "ask", fake_ask)
    slept: list[float] = []
    ask = eval_cli.asker("http://127.0.0.1:9", "token", 10, sleep=slept.append)
    assert ask("question") == done and slept == [6, 6]
    # Another refusal is no limit: the run stops, to be resumed.
    outcomes.append(client.ClientError("the connection closed", None))
    with pytest.raises(Unavailable, match="run the same command again"):
        ask("question")
    # Nor does it wait for ever.
    outcomes.extend([client.ClientError("limit", 429, eval_cli.LIMIT_WAIT_S)])
    with pytest.raises(Unavailable):
        ask("question")
