"""The frame seam against a real Redis: the log numbers frames and builds their text once, a
reader asks only for what follows its last seq, and the turn's end frees its slot."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from assistant_cli import stack
from shared.config import settings_from_env
from shared.frames import FrameLog, TurnClosed, head
from shared.limits import Admission, Leases, Limiter
from tests.conftest import ALLOC

REDIS_URL = ALLOC.redis_url("test_frames")


@pytest.fixture()
def client(services: stack.Supervisor) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(REDIS_URL)
    try:
        yield c
    finally:
        c.close()


def test_the_log_numbers_frames_and_a_reader_gets_only_what_follows(
        client: redis.Redis) -> None:
    turn = uuid.uuid4().hex
    log = FrameLog(client, turn, 60)
    assert log.append({"type": "accepted", "turn": turn}) == 0
    assert [log.append({"type": "token", "turn": turn, "text": t}) for t in "abc"] == [1, 2, 3]
    after = log.frames_after(1)
    assert [(f.seq, f.type) for f in after] == [(2, "token"), (3, "token")]
    # The text is what was published: seq and type first, read without decoding the rest.
    assert after[0].text == f'{{"seq":2,"type":"token","turn":"{turn}","text":"b"}}'
    assert head(after[0].text.encode()) == after[0]
    assert log.frames_after(3) == []


def test_nothing_is_logged_after_the_end_and_the_end_frees_the_slot(
        client: redis.Redis) -> None:
    settings = settings_from_env({"ASSISTANT_PROFILE": "test",
                                  "ASSISTANT_REDIS_URL": REDIS_URL})
    leases = Leases(settings, client)
    turn = uuid.uuid4().hex
    Admission(Limiter(settings, client), leases, client).admit(f"user-{turn}", "hi", turn,
                                                               "web-test")
    log = FrameLog(client, turn, 60)
    log.append({"type": "accepted", "turn": turn})
    assert leases.renew(turn) is True
    assert log.append({"type": "done", "turn": turn, "answer": ""}) == 1
    assert leases.renew(turn) is False  # released with the terminal frame
    with pytest.raises(TurnClosed):
        log.append({"type": "error", "turn": turn, "code": 503, "message": "late"})
    assert [f.type for f in log.frames_after(-1)] == ["accepted", "done"]


def test_a_lost_log_takes_no_frames_unless_told_which_seq(client: redis.Redis) -> None:
    turn = uuid.uuid4().hex
    log = FrameLog(client, turn, 60)
    with pytest.raises(TurnClosed):
        log.append({"type": "token", "turn": turn, "text": "x"})  # a worker after a restart
    assert log.append({"type": "error", "turn": turn, "code": 503, "message": "lost"},
                      seq_if_lost=5) == 5


def test_head_refuses_what_is_not_a_frame() -> None:
    assert head(b'{"type":"token","seq":1}') is None
    assert head(b'{"seq":01,"type":"token"}') is None
    assert head(b'{"seq":1,"type":"token","text":"\xff"}') is None
    frame = head('{"seq":7,"type":"done","answer":"ř"}'.encode())
    assert frame is not None and (frame.seq, frame.type, frame.terminal) == (7, "done", True)
