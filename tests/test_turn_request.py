"""shared/turn_request.py: the one web -> worker contract, and the worker's one read of it."""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from assistant_cli import stack
from shared import keys, turns
from shared.config import Settings
from shared.frames import FrameLog
from shared.redis_client import redis_client
from shared.turn_request import (
    VERSION,
    ContractError,
    Message,
    ProjectBlock,
    TurnRequest,
    grounding_numbers,
)
from tests.conftest import VAR, ensure_session_redis

FULL = TurnRequest(
    turn="a" * 32, user="b" * 64, message="Kolik je 3,5 % z 1200?", language="cs",
    mode="hybrid", history=(Message("user", "Ahoj"), Message("assistant", "Dobrý den")),
    project_id="p-1", project=ProjectBlock.from_text("Budget: 1200 CZK, -3 days", 12.5),
    tool_data={"projects": [{"id": "p-1", "name": "Move"}], "list_text": "- id p-1: Move",
               "read": {"p-1": {"project": "Move", "result": "", "opinions": ""}}})


def test_the_json_form_round_trips_exactly() -> None:
    data = json.loads(FULL.dumps())
    assert data["version"] == VERSION
    back = TurnRequest.loads(FULL.dumps())
    assert back == FULL and back.to_json() == FULL.to_json()
    assert (back.turn, back.language, back.mode, back.history, back.project) == (
        FULL.turn, "cs", "hybrid", FULL.history, FULL.project)
    minimal = TurnRequest(turn="t", user="u", message="m", language="en", mode="workflow")
    assert TurnRequest.loads(minimal.dumps()) == minimal


def test_the_project_block_grounds_the_numbers_of_its_text() -> None:
    assert FULL.project is not None
    assert FULL.project.grounding == ("1200", "-3") == grounding_numbers(FULL.project.text)
    assert grounding_numbers("COVID-19 and 2.5, 2.5 again") == ("19", "2.5")


def test_it_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        FULL.message = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        FULL.tool_data["read"] = {}  # type: ignore[index]


def _json(**changes: Any) -> dict[str, Any]:
    data = FULL.to_json()
    data.update(changes)
    return data


@pytest.mark.parametrize(("data", "says"), [
    (_json(version=2), "version 2 is not supported (this release reads version 1)"),
    (_json(version=None), "version None is not supported"),
    ({k: v for k, v in FULL.to_json().items() if k != "version"}, "version None"),
    (_json(version="1"), "version '1' is not supported"),
    (_json(version=1.0), "version 1.0 is not supported"),
    (_json(version=True), "version True is not supported"),
    (_json(version=[1]), "version [1] is not supported"),
    ({k: v for k, v in FULL.to_json().items() if k != "language"},
     "missing fields ['language']"),
    (_json(mode="tools"), "mode 'tools' is not one of"),
    (_json(message=None), "message must be a string"),
    (_json(language=["cs"]), "language must be a string"),
    (_json(history=[{"role": "system", "content": "x"}]), "history must be a list"),
    (_json(history=[{"role": "user"}]), "history must be a list"),
    (_json(history="Ahoj"), "history must be a list"),
    (_json(project_id=5), "project_id must be a string or null"),
    (_json(project={"text": "x"}), "project must be {text, grounding, ...} or null"),
    (_json(project={"text": "x", "grounding": [1], "read_ms": None}), "must be strings"),
    (_json(project={"text": "x", "grounding": [], "read_ms": "5"}), "read_ms must be a number"),
    (_json(tool_data=[1]), "tool_data must be an object or null"),
    ([FULL.to_json()], "not a JSON object"),
])
def test_other_versions_and_shapes_are_refused_by_name(data: Any, says: str) -> None:
    with pytest.raises(ContractError) as caught:
        TurnRequest.loads(json.dumps(data))
    assert says in str(caught.value)
    # What a user would be told: a plain sentence, no field names or versions.
    assert caught.value.code == 503 and "version" not in caught.value.public_message


def test_the_next_releases_optional_fields_are_read_around() -> None:
    # A rolling upgrade: a newer web tier adds optional fields (a ProjectBlock's `figures`,
    # a top-level one, a history item's); this release reads the turn as before.
    data = FULL.to_json()
    data["project"] = {**data["project"], "figures": [{"label": "Budget", "value": "1200"}]}
    data["answer_form"] = "quotes"
    data["history"] = [{**m, "at": 1} for m in data["history"]]
    assert TurnRequest.loads(json.dumps(data)) == FULL


def test_the_previous_releases_shape_and_a_shorter_one_are_read() -> None:
    # The release before this one wrote exactly these ten fields; a writer may leave out an
    # optional field (absent means the default), and a project's read_ms.
    assert set(FULL.to_json()) == {"version", "turn", "user", "message", "language", "mode",
                                   "history", "project_id", "project", "tool_data"}
    required = {k: v for k, v in FULL.to_json().items()
                if k in ("version", "turn", "user", "message", "language", "mode")}
    assert TurnRequest.loads(json.dumps(required)) == dataclasses.replace(
        FULL, history=(), project_id=None, project=None, tool_data=None)
    assert FULL.project is not None
    short = {**required, "project": {"text": FULL.project.text,
                                     "grounding": list(FULL.project.grounding)}}
    assert TurnRequest.loads(json.dumps(short)).project == dataclasses.replace(
        FULL.project, read_ms=None)


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(ContractError, match="not valid JSON"):
        TurnRequest.loads(b"\x80{")


# -- Stored in Redis and read by the worker task -------------------------------------------


@pytest.fixture(scope="module")
def client(settings: Settings) -> Iterator[redis.Redis]:
    sup = stack.Supervisor(VAR / "log")
    try:
        ensure_session_redis(sup)
        yield redis_client(settings)
    finally:
        sup.stop_all()


def test_stored_under_the_turn_key_with_the_replay_ttl(client: redis.Redis,
                                                       settings: Settings) -> None:
    req = dataclasses.replace(FULL, turn=uuid.uuid4().hex)
    turns.store_request(client, req, settings.replay_ttl_s)
    assert 0 < client.ttl(keys.turn_request(req.turn)) <= settings.replay_ttl_s
    assert turns.request_stored(client, req.turn)
    assert turns.load_request(client, req.turn) == req
    with pytest.raises(ContractError, match="is gone"):
        turns.load_request(client, uuid.uuid4().hex)


@pytest.mark.parametrize(("stored", "says"), [
    (lambda req: json.dumps({**req.to_json(), "version": 99}), "version 99 is not supported"),
    (lambda req: None, "is gone"),
])
def test_the_worker_ends_a_turn_it_cannot_read_with_one_error_frame(
        client: redis.Redis, settings: Settings, caplog: pytest.LogCaptureFixture,
        stored: Any, says: str) -> None:
    from worker.tasks import answer_turn

    req = dataclasses.replace(FULL, turn=uuid.uuid4().hex)
    raw = stored(req)
    if raw is not None:
        client.set(keys.turn_request(req.turn), raw, ex=60)
    log = FrameLog(client, req.turn, 60)
    log.append({"type": "accepted", "turn": req.turn})
    with caplog.at_level(logging.WARNING, logger="worker.tasks"):
        answer_turn.run(req.turn, 1)  # the task's body, here; no broker is involved
    frames = [f.fields() for f in log.frames_after(0)]
    assert [(f["type"], f["code"]) for f in frames] == [("error", 503)], frames
    assert says in caplog.text and req.message not in caplog.text
