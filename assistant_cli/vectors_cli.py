"""`become-assistant corpus vectors --export FILE`: the serving index's vectors as a vectors file."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
from pathlib import Path
from typing import Any

from shared.config import get_settings


def cmd_corpus_vectors(args: argparse.Namespace) -> int:
    """Write the serving index's cached vectors to a vectors file (corpus_jobs/vector_file.py)."""
    from corpus_jobs.build import model_key, served_vectors
    from corpus_jobs.vector_file import dump_vector_file
    from shared import corpus_store

    settings = get_settings()
    if args.dsn:
        settings = dataclasses.replace(settings, corpus_dsn=args.dsn)
    with corpus_store.connect(settings.corpus_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT version, manifest, embedding_model FROM indexes "
                           "WHERE current").fetchone()
        if row is None:
            print("error: no index is serving: build one first (become-assistant corpus "
                  "build)", file=sys.stderr)
            return 2
        version, corpus, model = row
        if model != settings.embeddings.model:
            print(f"error: index {version} was embedded with {model}, the settings name "
                  f"{settings.embeddings.model}", file=sys.stderr)
            return 2
        rows, lacking = served_vectors(conn, settings)
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    n = dump_vector_file(
        Path(args.export_file), model_key(settings),
        today, f"exported by `become-assistant corpus vectors --export` from index {version} "
        "and the build's caches (the embeddings role's own vectors)", str(corpus), rows)
    print(f"exported {n} vectors of index {version} ({len(rows['embedding_cache'])} passages "
          f"and views, {len(rows['span_vectors'])} spans) to {args.export_file}"
          + (f"; {lacking} not embedded yet, left out" if lacking else ""))
    return 0


def add_parser(csub: Any) -> None:
    """The `corpus vectors` subcommand."""
    v = csub.add_parser("vectors", help="export the serving index's vectors to a vectors file "
                                        "(shipped next to a manifest: a first build embeds "
                                        "only what it lacks)")
    v.add_argument("--export", dest="export_file", metavar="FILE", required=True,
                   help="the vectors file to write (.npz)")
    v.add_argument("--dsn", default=None, help="owner DSN (default ASSISTANT_CORPUS_DSN)")
    v.set_defaults(func=cmd_corpus_vectors)
