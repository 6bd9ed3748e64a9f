"""Read-only connections to the corpus database, one kept per worker thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from shared import corpus_store
from shared.config import Settings

_local = threading.local()


@contextmanager
def corpus_connection(settings: Settings) -> Iterator[psycopg.Connection]:
    """A healthy autocommit connection as the read-only role, reused within the thread."""
    conn: psycopg.Connection | None = getattr(_local, "conn", None)
    if conn is None or conn.closed or conn.broken:
        conn = corpus_store.connect(settings.corpus_read_dsn, autocommit=True)
        _local.conn = conn
    try:
        yield conn
    except psycopg.OperationalError:
        conn.close()
        _local.conn = None
        raise
