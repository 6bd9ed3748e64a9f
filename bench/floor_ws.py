"""The bare floor: a trivial flask-sock handler under gunicorn+gevent relaying one Redis channel.

gunicorn -k gevent -b 127.0.0.1:PORT bench.floor_ws:app   (channel from FLOOR_CHANNEL)
"""

from __future__ import annotations

import os
from typing import Any

import redis
from flask import Flask
from flask_sock import Sock

app = Flask(__name__)
sock = Sock(app)


@sock.route("/floor")
def floor(ws: Any) -> None:
    """Forward every message of the channel to the socket."""
    pubsub = redis.Redis.from_url(os.environ.get("FLOOR_REDIS", "redis://127.0.0.1:6379/9")
                                  ).pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(os.environ.get("FLOOR_CHANNEL", "floor"))
    ws.send("ready")
    for message in pubsub.listen():
        ws.send(message["data"].decode())
