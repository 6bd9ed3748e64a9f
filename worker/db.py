"""Read-only connections to the corpus database, one kept per worker thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from shared import corpus_store
from shared.config import Settings
from shared.errors import Unavailable

_local = threading.local()
DOWN = "The document index is unavailable right now. Please try again shortly."


def _fresh(settings: Settings) -> psycopg.Connection:
    try:
        conn = corpus_store.connect(settings.corpus_read_dsn, autocommit=True)
    except Unavailable as exc:
        raise Unavailable("corpus database unreachable", public_message=DOWN) from exc
    _local.conn = conn
    return conn


@contextmanager
def corpus_connection(settings: Settings) -> Iterator[psycopg.Connection]:
    """A healthy autocommit connection as the read-only role, reused within the thread.

    A kept connection is checked with one round trip first: after a database restart it is
    dead, and a fresh one serves the turn instead of failing it. Database failures become
    Unavailable, so the turn ends with an error frame from the worker.
    """
    conn: psycopg.Connection | None = getattr(_local, "conn", None)
    if conn is None or conn.closed or conn.broken:
        conn = _fresh(settings)
    else:
        try:
            conn.execute("SELECT 1")
        except psycopg.OperationalError:
            conn.close()
            conn = _fresh(settings)
    try:
        yield conn
    except psycopg.OperationalError as exc:
        conn.close()
        _local.conn = None
        raise Unavailable("corpus database failed", public_message=DOWN) from exc
