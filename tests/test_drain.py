"""A web process asked to stop (web/drain.py), without a stack: what its sockets and streams
send before they close, what its health answer says, and how the CLI acts on the close.

The rule the clients rely on: a socket closed with 1012 has been sent the `accepted` frame of
every turn it started, so a 1012 close without one means the question was never taken and is
asked again (the CLI here, the panel in tests/js/transport.test.js); a turn never runs unseen
or twice. The stack-level rounds (web SIGTERM mid-stream, rolling upgrades) are in
tests/test_faults.py and `make docker-smoke`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from simple_websocket import ConnectionClosed

from assistant_cli import client as cli
from shared.config import Settings, settings_from_env
from shared.frames import Frame
from web import create_app, drain
from web.routes import sse
from web.routes.ws import Session
from web.tickets import TicketGrant

TURN = "c" * 32


def frame(seq: int, kind: str, **fields: Any) -> Frame:
    return Frame(seq, kind, json.dumps({"seq": seq, "type": kind, "turn": TURN, **fields}))


class ServerSocket:
    """The server's end of a client socket (simple-websocket's Server, as Session uses it):
    records what is sent and the close, in order; receive() waits until it is closed."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self._closed = threading.Event()

    def send(self, text: str) -> None:
        self.events.append(json.loads(text))

    def receive(self) -> str:
        self._closed.wait(10)
        raise ConnectionClosed(1012, "closed")

    def close(self, reason: int = 1000, message: str = "") -> None:
        self.events.append(("close", reason))
        self._closed.set()


class Follower:
    """A turn followed by the socket, whose replay log holds `logged` (its accepted frame
    at least) that the socket has not sent yet."""

    def __init__(self, logged: list[Frame]) -> None:
        self.turn = TURN
        self.done = False
        self.logged = logged

    def catch_up(self) -> list[Frame]:
        out, self.logged = self.logged, []
        return out


@pytest.fixture()
def no_drain() -> Iterator[None]:
    """The process-wide drain flag and registry, as before the test."""
    yield
    drain.draining.clear()
    with drain._lock:
        drain._inboxes.clear()


def session_with(follower: Follower | None) -> tuple[Session, ServerSocket]:
    sock = ServerSocket()
    session = Session(sock, TicketGrant("drain-user", "token", time.time() + 60), Settings(),
                      None)  # type: ignore[arg-type]
    session.follower = follower  # type: ignore[assignment]
    return session, sock


def test_a_socket_closed_for_a_restart_first_sends_its_turns_accepted(no_drain: None) -> None:
    # The ask was taken (the turn is open) but its accepted frame had not gone out when the
    # process began to stop: it goes out before the 1012 close, so the client resumes the
    # turn instead of asking again (a second turn) or giving up (a turn run unseen).
    session, sock = session_with(Follower([frame(0, "accepted"), frame(1, "token", text="A")]))
    session.inbox.put(("drain", None))
    session.run()
    assert [e if isinstance(e, tuple) else (e["seq"], e["type"]) for e in sock.events] == \
        [(0, "accepted"), (1, "token"), ("close", drain.RESTART_CLOSE)]


def test_a_socket_without_a_turn_is_closed_for_a_restart_at_once(no_drain: None) -> None:
    session, sock = session_with(None)
    session.inbox.put(("drain", None))
    session.inbox.put(("client", json.dumps({"type": "ask", "message": "Not taken"})))
    session.run()
    assert sock.events == [("close", drain.RESTART_CLOSE)], "the queued ask was never taken"


def test_an_sse_stream_of_a_stopping_process_sends_what_is_logged_then_reconnect(
        no_drain: None) -> None:
    app = create_app({"SETTINGS": Settings(), "TESTING": True})

    class Relay:
        def unsubscribe(self, sub: Any) -> None:
            pass

    drain.draining.set()
    with app.app_context():
        events = list(sse.stream(Relay(), None,  # type: ignore[arg-type]
                                 Follower([frame(0, "accepted")]), []))  # type: ignore[arg-type]
    kinds = [line for e in events for line in e.split("\n") if line.startswith("event: ")]
    assert kinds == ["event: accepted", "event: reconnect"]


def test_ping_answers_503_once_the_process_is_stopping(no_drain: None) -> None:
    web = create_app({"SETTINGS": settings_from_env({}), "TESTING": True}).test_client()
    assert web.get("/api/v1/ping").status_code == 200
    drain.start_draining()
    resp = web.get("/api/v1/ping")
    assert resp.status_code == 503 and resp.get_json() == {"ok": False, "stopping": True}


class ClientSocket:
    """The CLI's end of a socket (simple-websocket's Client): plays the server's frames, then
    closes with `close` (a code) if given."""

    def __init__(self, frames: list[dict[str, Any]], close: int | None = None) -> None:
        self.frames = [json.dumps(f) for f in frames]
        self.close_code = close
        self.close_reason: int | None = None
        self.sent: list[dict[str, Any]] = []

    def send(self, text: str) -> None:
        self.sent.append(json.loads(text))

    def receive(self, timeout: float | None = None) -> str:
        if self.frames:
            return self.frames.pop(0)
        self.close_reason = self.close_code
        raise ConnectionClosed(self.close_code or 1006, "closed")

    def close(self) -> None:
        pass


def cli_sockets(monkeypatch: pytest.MonkeyPatch, *socks: ClientSocket) -> list[bool]:
    """stream_turn's sockets are `socks`, in order; returns whether each was retried."""
    left = list(socks)
    retried: list[bool] = []

    def connect(base_url: str, token: str, headers: Any, deadline: float,
                *retrying: bool, **named: bool) -> ClientSocket:
        retried.append(any(retrying) or any(named.values()))
        return left.pop(0)

    monkeypatch.setattr(cli, "_connect", connect)
    return retried


def test_the_cli_asks_again_when_a_restart_closes_the_socket_before_accepted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = ClientSocket([], close=cli.RESTART_CLOSE)
    second = ClientSocket([{"type": "accepted", "turn": TURN, "seq": 0},
                           {"type": "done", "turn": TURN, "seq": 1, "answer": "A"}])
    retried = cli_sockets(monkeypatch, first, second)
    got = list(cli.stream_turn("http://web.test", "token", "How does it work?"))
    assert [f["type"] for f in got] == ["accepted", "done"]
    assert first.sent == second.sent and second.sent[0]["type"] == "ask"
    assert retried == [False, True]


def test_the_cli_resumes_after_accepted_and_gives_up_on_other_closes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = ClientSocket([{"type": "accepted", "turn": TURN, "seq": 0}],
                         close=cli.RESTART_CLOSE)
    second = ClientSocket([{"type": "done", "turn": TURN, "seq": 1, "answer": "A"}])
    cli_sockets(monkeypatch, first, second)
    assert [f["seq"] for f in cli.stream_turn("http://web.test", "t", "Q?")] == [0, 1]
    assert second.sent == [{"type": "resume", "turn": TURN, "after": 0}]

    cli_sockets(monkeypatch, ClientSocket([], close=1011))
    with pytest.raises(cli.ClientError, match="closed before the answer ended"):
        list(cli.stream_turn("http://web.test", "t", "Q?"))
