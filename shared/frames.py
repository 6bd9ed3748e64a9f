"""Wire protocol v1 frames and the per-turn frame log (Redis Stream + pub/sub).

A logged frame is JSON text that starts with its seq and type, `{"seq":7,"type":"token",...}`,
built once, by the log's append script, which numbers it. Those bytes are what the replay log
stores, what is published live, and what the relay sends to a socket or wraps as an SSE event:
nobody decodes and re-encodes a frame on the way. The relay reads seq and type from that
fixed head (`head`), and checks once that the text is UTF-8.

The log is a Redis Stream whose entry ids are `<seq>-1`, so a reader asks for what follows the
last seq it has (XRANGE from `<seq+1>-0`), never for the whole log.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import redis

from shared import keys
from shared.frame_types import TERMINAL
from shared.limits import release_slot_lua

TERMINAL_TYPES = TERMINAL
_TYPE = re.compile(r"[a-z_]{1,32}")
_HEAD = re.compile(rb'\{"seq":(0|[1-9][0-9]{0,9}),"type":"([a-z_]{1,32})"[,}]')


@dataclass(frozen=True, slots=True)
class Frame:
    """A logged frame as published: its seq and type, and its JSON text to send as-is."""

    seq: int
    type: str
    text: str

    @property
    def terminal(self) -> bool:
        """Whether the frame ends its turn."""
        return self.type in TERMINAL_TYPES

    def fields(self) -> dict[str, Any]:
        """The decoded frame (for the rare frame whose body matters, e.g. a restart)."""
        value: dict[str, Any] = json.loads(self.text)
        return value


class TurnClosed(Exception):
    """The turn's log takes no more frames: it has ended, or Redis lost it."""


class NotNext(Exception):
    """An append that expected another seq wrote nothing (see `append`'s `expect`)."""


def head(data: bytes) -> Frame | None:
    """The frame of published bytes, read from its head; None if they are not one of ours."""
    match = _HEAD.match(data)
    if match is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return Frame(int(match.group(1)), match.group(2).decode(), text)


def encode(frame: dict[str, Any]) -> str:
    """Serialise a frame compactly (it is sent as-is to clients); seq and type first."""
    first = {k: frame[k] for k in ("seq", "type") if frame.get(k) is not None}
    return json.dumps({**first, **frame}, ensure_ascii=False, separators=(",", ":"))


# KEYS: log stream, live channel, slot holder hash, cluster slot set.
# ARGV: type, the frame's other fields as JSON object members ('' for none), ttl (s), seq to
# use if the log is gone ('' = refuse), turn, the seq the writer expects ('' = any). Numbers
# the frame (the log's last seq + 1; seq 0 only for `accepted` on an empty log), refuses after
# a terminal frame, appends and publishes, and on a terminal frame frees the turn's in-flight
# slot. Returns the seq, -1 if the turn had ended, -2 if its log is gone, -3 (nothing written)
# if the seq is not the one expected: a retried append that had landed, or a log that lost its
# newest frames (a Sentinel failover to a replica that had not received them).
_APPEND_LUA = """
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local seq
if top[1] then
  local f = top[1][2]
  for i = 1, #f, 2 do
    if f[i] == 'k' and (f[i + 1] == 'done' or f[i + 1] == 'error') then return -1 end
  end
  seq = tonumber(string.match(top[1][1], '^(%d+)')) + 1
elseif ARGV[1] == 'accepted' then
  seq = 0
elseif ARGV[4] ~= '' then
  seq = tonumber(ARGV[4])
else
  return -2
end
if ARGV[6] and ARGV[6] ~= '' and seq ~= tonumber(ARGV[6]) then return -3 end
local text = '{"seq":' .. seq .. ',"type":"' .. ARGV[1] .. '"'
if ARGV[2] ~= '' then text = text .. ',' .. ARGV[2] end
text = text .. '}'
-- Publish first: live listeners get the frame without waiting for the stream append; a
-- reader that resumes in between finds it in the log at its next catch-up.
redis.call('PUBLISH', KEYS[2], text)
if seq == 0 then
  local t = redis.call('TIME')
  redis.call('XADD', KEYS[1], seq .. '-1', 'f', text, 'k', ARGV[1], 'at', t[1])
else
  redis.call('XADD', KEYS[1], seq .. '-1', 'f', text, 'k', ARGV[1])
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
if ARGV[1] == 'done' or ARGV[1] == 'error' then
""" + release_slot_lua("KEYS[3]", "KEYS[4]", "ARGV[5]") + """
end
return seq
"""


def _body(frame: dict[str, Any]) -> str:
    """A frame's fields but seq and type, as JSON object members (the append script's ARGV)."""
    rest = {k: v for k, v in frame.items() if k not in ("seq", "type")}
    return json.dumps(rest, ensure_ascii=False, separators=(",", ":"))[1:-1]


def _entry(entry: Any) -> Frame:
    entry_id, fields = entry
    seq = int((entry_id.decode() if isinstance(entry_id, bytes) else entry_id).split("-")[0])
    text, kind = fields.get(b"f") or fields.get("f"), fields.get(b"k") or fields.get("k")
    text = text.decode() if isinstance(text, bytes) else text
    kind = kind.decode() if isinstance(kind, bytes) else kind
    return Frame(seq, str(kind), str(text))


class FrameLog:
    """Numbers, records and publishes a turn's frames, one round trip each."""

    def __init__(self, client: redis.Redis, turn: str, ttl_s: int) -> None:
        self._client = client
        self.turn = turn
        self._ttl = ttl_s
        self._log = keys.turn_log(turn)
        self._keys = [self._log, keys.turn_channel(turn), keys.slot_holder(turn),
                      keys.SLOTS_ALL]
        self._append = client.register_script(_APPEND_LUA)

    def append(self, frame: dict[str, Any], seq_if_lost: int | None = None,
               expect: int | None = None) -> int:
        """Number, record and publish a frame (its `seq` is assigned here); its seq.

        A terminal frame also frees the turn's in-flight slot. Raises TurnClosed once the
        turn has ended, or when its log is gone (unless seq_if_lost says which seq to use);
        NotNext, writing nothing, when `expect` is given and the frame would get another seq.
        """
        kind = str(frame["type"])
        if not _TYPE.fullmatch(kind):
            raise ValueError(f"bad frame type {kind!r}")
        seq = int(self._append(keys=self._keys, args=[
            kind, _body(frame), self._ttl, "" if seq_if_lost is None else seq_if_lost, self.turn,
            "" if expect is None else expect]))
        if seq == -3:
            raise NotNext(f"expected seq {expect}")
        if seq < 0:
            raise TurnClosed("turn ended" if seq == -1 else "turn log gone")
        return seq

    @staticmethod
    def text(seq: int, frame: dict[str, Any]) -> str:
        """The text the log stores and publishes for `frame` numbered `seq`."""
        body = _body(frame)
        return f'{{"seq":{seq},"type":"{frame["type"]}"' + (f",{body}" if body else "") + "}"

    def frames_after(self, after_seq: int) -> list[Frame]:
        """The logged frames with seq greater than after_seq, in order (read from there on)."""
        return self.frames(self._client.xrange(self._log, min=f"{after_seq + 1}-0"))

    def last(self) -> Frame | None:
        """The newest logged frame (None for an empty or lost log)."""
        entries = self._client.xrevrange(self._log, count=1)
        return _entry(entries[0]) if entries else None

    def read_after(self, pipe: Any, after_seq: int) -> None:
        """Queue frames_after's read on a pipeline (decode its result with `frames`)."""
        pipe.xrange(self._log, min=f"{after_seq + 1}-0")

    def read_head(self, pipe: Any) -> None:
        """Queue head's read on a pipeline (decode its result with `first`)."""
        pipe.xrange(self._log, count=1)

    @staticmethod
    def frames(entries: Any) -> list[Frame]:
        """Frames of an XRANGE result."""
        return [_entry(e) for e in entries]

    @staticmethod
    def first(entries: Any) -> tuple[Frame, float | None] | None:
        """head's result from an XRANGE COUNT 1 result."""
        if not entries:
            return None
        at = entries[0][1].get(b"at") or entries[0][1].get("at")
        return _entry(entries[0]), float(at) if at is not None else None
