"""`become-assistant corpus captions`: list, write, import and export a corpus's captions."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
from pathlib import Path
from typing import Any

from assistant_cli import stack
from shared.config import get_settings
from shared.errors import ConfigError

NO_ROLE = ("no caption role is configured: set ASSISTANT_CAPTION_MODEL and "
           "ASSISTANT_CAPTION_BASE_URL (and ASSISTANT_CAPTION_PROVIDER=api for a hosted one)")


def cmd_corpus_captions(args: argparse.Namespace) -> int:
    """Passages without a caption; --write, --import FILE or --export FILE."""
    from corpus_jobs import captions as caps
    from corpus_jobs.build import load_pieces
    from corpus_jobs.caption_file import LANGUAGES, load_caption_file
    from corpus_jobs.manifest import load_manifest
    from shared import corpus_store

    settings = get_settings()
    if args.dsn:
        settings = dataclasses.replace(settings, corpus_dsn=args.dsn)
    languages = tuple(x.strip() for x in args.languages.split(",") if x.strip()) \
        if args.languages else (settings.caption_languages or LANGUAGES)
    if any(x not in LANGUAGES for x in languages):
        raise ConfigError(f"--languages: en and/or cs, not {args.languages!r}")
    if args.write and settings.captions is None:
        print(f"error: {NO_ROLE}", file=sys.stderr)
        return 2
    manifest = load_manifest(args.manifest or settings.corpus_manifest)
    pieces, _, _ = load_pieces(manifest)
    file = load_caption_file(manifest.captions) \
        if manifest.captions is not None and manifest.captions.is_file() else None
    try:
        stack.ensure_corpus_database(settings.corpus_dsn, settings.corpus_read_dsn)
    except stack.StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with corpus_store.connect(settings.corpus_dsn, autocommit=True) as conn:
        caps.ensure_cache(conn)
        if args.import_file:
            return _import(conn, Path(args.import_file), pieces)
        prefer = settings.captions.model if settings.captions else ""
        plan = caps.plan(conn, pieces, languages, file, prefer)
        if args.export_file:
            return _export(Path(args.export_file), pieces, plan, languages, manifest.name)
        if args.write:
            assert settings.captions is not None
            role = settings.captions

            def progress(done: int, total: int) -> None:
                print(f"\rcaptioning {done}/{total}", end="", file=sys.stderr, flush=True)

            calls = caps.fill(conn, role, pieces, plan, languages, progress)
            print(("\n" if calls else "") + f"wrote {calls} captions with {role.model} "
                  "(kept in the caption cache)")
    return _list(pieces, plan, languages, manifest.captions if file is not None else None)


def _list(pieces: list[Any], plan: Any, languages: tuple[str, ...], file: Path | None) -> int:
    from corpus_jobs.captions import caption_key

    missing = set(plan.missing(languages))
    seen: set[str] = set()
    for piece in pieces:
        key = caption_key(piece)
        if key in missing and key not in seen:
            seen.add(key)
            lacking = ", ".join(x for x in languages if x not in plan.captions[key])
            print(f"{piece.source} | {piece.section}  (no {lacking} caption)")
    c = plan.counts()
    where = f"file {file.name}" if file is not None else "no captions file"
    print(f"{len(missing)} of {len(plan.captions)} passages lack a caption in "
          f"{'+'.join(languages)} ({where}: {c['file']}, cache: {c['cache']}, none: "
          f"{c['none']}; {c['changed']} changed since the file was written)")
    return 0


def _import(conn: Any, path: Path, pieces: list[Any]) -> int:
    from corpus_jobs.caption_file import load_caption_file
    from corpus_jobs.captions import caption_key, store

    cf = load_caption_file(path)
    keys = {caption_key(p) for p in pieces}
    n = 0
    with conn.transaction():
        for key, entry in cf.entries.items():
            for lang, caption in entry.captions.items():
                store(conn, key, cf.label, lang, caption)
                n += 1
    current = sum(1 for k in cf.entries if k in keys)
    print(f"imported {n} captions of {len(cf.entries)} passages from {path} as "
          f"{cf.label!r}; {current} of those passages are in the corpus now")
    return 0


def _export(path: Path, pieces: list[Any], plan: Any, languages: tuple[str, ...],
            corpus: str) -> int:
    from corpus_jobs.caption_file import CaptionFile, Entry, dump_caption_file
    from corpus_jobs.captions import caption_key

    entries = {}
    for piece in pieces:
        key = caption_key(piece)
        if plan.captions.get(key):
            entries[key] = Entry(piece.source, piece.section, dict(plan.captions[key]))
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    dump_caption_file(path, CaptionFile(
        f"{corpus}-captions-{today}", today,
        "exported by `become-assistant corpus captions --export` from the manifest's captions "
        "file and the caption cache", entries), corpus)
    print(f"exported captions of {len(entries)} of {len(plan.captions)} passages "
          f"({'+'.join(languages)}) to {path}")
    return 0


def add_parser(csub: Any) -> None:
    """The `corpus captions` subcommand."""
    c = csub.add_parser("captions", help="passages without a caption; write, import or "
                                         "export captions")
    c.add_argument("--manifest", default=None,
                   help="corpus manifest (default: ASSISTANT_CORPUS_MANIFEST)")
    what = c.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true",
                      help="write the missing captions with the caption role (ASSISTANT_CAPTION_*)")
    what.add_argument("--import", dest="import_file", metavar="FILE", default=None,
                      help="copy a captions file into the caption cache")
    what.add_argument("--export", dest="export_file", metavar="FILE", default=None,
                      help="write the corpus's captions (file + cache) to a captions file")
    c.add_argument("--languages", default=None,
                   help="en, cs or en,cs (default: ASSISTANT_CAPTION_LANGUAGES)")
    c.add_argument("--dsn", default=None, help="owner DSN (default ASSISTANT_CORPUS_DSN)")
    c.set_defaults(func=cmd_corpus_captions)
