"""web/protocol.py: the client frames both transports parse, refused with a plain sentence."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.config import Settings
from shared.errors import AssistantError, BadRequest, TooLarge
from shared.turn_request import Message
from web.protocol import (
    MAX_HISTORY,
    Ask,
    decode_frame,
    frame_type,
    parse_ask,
    parse_cancel,
    parse_last_event_id,
    parse_resume,
)

S = Settings(profile="test")


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"type": "ping"}', "Frames must be JSON text."),
    (None, "Frames must be JSON text."),
    ("", "The frame is not valid JSON."),
    ("{", "The frame is not valid JSON."),
    ("[" * 100_000, "The frame is not valid JSON."),  # too deep for the parser
    ('"ask"', "The frame is not valid JSON."),
    ("[1, 2]", "The frame is not valid JSON."),
    ("null", "The frame is not valid JSON."),
])
def test_bad_frames_are_refused(raw: Any, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        decode_frame(raw)
    assert caught.value.public_message == message and caught.value.code == 422


@pytest.mark.parametrize("frame", [{}, {"type": None}, {"type": "ASK"}, {"type": "answer"},
                                   {"type": ["ask"]}, {"type": "done"}, {"type": 1}])
def test_unknown_types_are_refused(frame: dict[str, Any]) -> None:
    with pytest.raises(BadRequest, match="unknown type") as caught:
        frame_type(frame)
    assert caught.value.public_message == "Unknown frame type."


@pytest.mark.parametrize("kind", ["ask", "resume", "cancel", "ping"])
def test_the_four_client_types_are_known(kind: str) -> None:
    assert frame_type(decode_frame(json.dumps({"type": kind}))) == kind


def test_an_ask_parses_to_one_typed_value() -> None:
    ask = parse_ask({"type": "ask", "message": "  How does it work?  ", "project_id": "p-1",
                     "history": [{"role": "user", "content": "Hi"},
                                 {"role": "assistant", "content": "Hello"}]}, S)
    assert ask == Ask("How does it work?", (Message("user", "Hi"), Message("assistant", "Hello")),
                      "p-1", None)


@pytest.mark.parametrize(("frame", "error", "detail"), [
    ({}, BadRequest, "empty message"),
    ({"message": 5}, BadRequest, "empty message"),
    ({"message": " \n "}, BadRequest, "empty message"),
    ({"message": "a\x07b"}, BadRequest, "bad characters"),
    ({"message": "lone \ud800 surrogate"}, BadRequest, "bad characters"),
    ({"message": "x" * (S.max_message_chars + 1)}, TooLarge, "message too long"),
    ({"message": "hi", "history": {"role": "user"}}, BadRequest, "bad history"),
    ({"message": "hi", "history": [{"role": "system", "content": "x"}]}, BadRequest,
     "bad history"),
    ({"message": "hi", "history": [{"role": "user", "content": 3}]}, BadRequest, "bad history"),
    ({"message": "hi", "history": [{"role": "user", "content": "x"}] * (MAX_HISTORY + 1)},
     BadRequest, "bad history"),
    ({"message": "hi", "history": [{"role": "user", "content": "x" * 6001}]}, TooLarge,
     "history entry too long"),
    ({"message": "hi", "project_id": "p" * 65}, BadRequest, "bad project id"),
    ({"message": "hi", "project_id": ["p"]}, BadRequest, "bad project id"),
    # Validated like the chart's id, so ".." never reaches the app's path.
    ({"message": "hi", "project_id": ".."}, BadRequest, "bad project id"),
    ({"message": "hi", "project_id": "../users/me"}, BadRequest, "bad project id"),
    ({"message": "hi", "project_id": "p/1"}, BadRequest, "bad project id"),
    ({"message": "hi", "project_id": "p 1"}, BadRequest, "bad project id"),
    ({"message": "hi", "project_id": "p%2F1"}, BadRequest, "bad project id"),
    ({"message": "hi", "mode": "agent"}, BadRequest, "mode override"),
])
def test_bad_asks_are_refused(frame: dict[str, Any], error: type[AssistantError],
                              detail: str) -> None:
    with pytest.raises(error, match=detail):
        parse_ask(frame, S)


def test_the_mode_override_is_checked_in_dev_too() -> None:
    dev = Settings(profile="dev")
    assert parse_ask({"message": "hi", "mode": "hybrid"}, dev).mode == "hybrid"
    with pytest.raises(BadRequest, match="bad mode"):
        parse_ask({"message": "hi", "mode": "tools"}, dev)


@pytest.mark.parametrize(("frame", "expected"), [
    ({"turn": "t1"}, ("t1", -1)), ({"turn": "t1", "after": 4}, ("t1", 4))])
def test_resume_frames(frame: dict[str, Any], expected: tuple[str, int]) -> None:
    assert parse_resume(frame) == expected


@pytest.mark.parametrize("frame", [{}, {"turn": ""}, {"turn": 5}, {"turn": "t", "after": -2},
                                   {"turn": "t", "after": True}, {"turn": "t", "after": "3"}])
def test_bad_resume_frames(frame: dict[str, Any]) -> None:
    with pytest.raises(BadRequest, match="bad resume"):
        parse_resume(frame)


def test_cancel_frames() -> None:
    assert parse_cancel({"turn": "t1"}) == "t1"
    for frame in ({}, {"turn": ""}, {"turn": None}, {"turn": 1}):
        with pytest.raises(BadRequest, match="bad cancel"):
            parse_cancel(frame)


@pytest.mark.parametrize(("raw", "after"), [("-1", -1), ("7", 7), ("-9", -1), (" 3 ", 3)])
def test_last_event_ids(raw: str, after: int) -> None:
    assert parse_last_event_id(raw) == after


@pytest.mark.parametrize("raw", ["", "seven", "1.5", "0x10"])
def test_bad_last_event_ids(raw: str) -> None:
    with pytest.raises(BadRequest, match="bad last event id"):
        parse_last_event_id(raw)
