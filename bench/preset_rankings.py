"""Every retrieval preset's rankings, recorded and compared: a refactor of the retrieval code or
its knobs must not move one passage.

For the chat turn's retrieval (the test settings), a few settings-only variants of it, and every
preset (`eval retrieval --settings NAME`), each question of the dev set and of the held-out set
is ranked as `eval retrieval` ranks it (`rank`, the top MRR_DEPTH, candidates at least that):
as asked, and with its few-shot translation when Czech (`+tr`). `record` writes the ranked
passage ids and scores, with the translations used; `compare` ranks again with the recorded
translations (no translation is asked again) and exits 1 on any difference.

The index: the BeCoMe corpus with its caption and question views (or the part of it that
`--include` names, recorded for `compare`), built into a database of its own on the test
services (tests/conftest.py, ports moved by BA_TEST_PORT_OFFSET), without the quotes form's span
vectors (ranking never reads them). Services that already answer are reused and the build is
skipped when the corpus is unchanged, so `serve` can keep them up while `record` runs on one
checkout and `compare` on another:

    BA_TEST_PORT_OFFSET=400 .venv/bin/python -m bench.preset_rankings serve &
    # in a checkout of the code before, with this script copied there (PYTHONPATH=that checkout):
    BA_TEST_PORT_OFFSET=400 .venv/bin/python -m bench.preset_rankings record /tmp/rankings.json
    # in the checkout after (PYTHONPATH=this one):
    BA_TEST_PORT_OFFSET=400 .venv/bin/python -m bench.preset_rankings compare /tmp/rankings.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

import corpus_jobs.build
from assistant_cli import stack
from assistant_cli.run import Plan, start_services
from corpus_jobs.build import build_index
from corpus_jobs.manifest import load_manifest
from shared import corpus_store
from shared.config import Settings, settings_from_env
from shared.language import detect_language
from tests import conftest
from worker import evaluation as ev
from worker.pipeline.retrieve import RetrievalConfig, rank

SETS = {"dev": "../shared/eval/dev.jsonl", "heldout": "bench/retrieval/heldout.jsonl"}
MANIFEST = "corpus_jobs/manifests/become.toml"
DB = "corpus_presets"
# The chat turn's retrieval with each setting moved off its default: the settings' fields with
# the ranking's fixed choices (the presets vary those).
SETTINGS_VARIANTS: dict[str, dict[str, Any]] = {
    "settings-dense": {"mode": "dense"}, "settings-bm25": {"mode": "bm25"},
    "settings-pools": {"per_language_pools": True}, "settings-lemmatize": {"lemmatize": True},
    "settings-candidates-40": {"candidates": 40}}


def test_settings() -> Settings:
    """The test settings, the corpus in a database of its own."""
    s = settings_from_env(conftest.TEST_ENV)
    return dataclasses.replace(
        s, corpus_dsn=f"postgresql://corpus_owner@127.0.0.1:{conftest.PG_PORT}/{DB}",
        corpus_read_dsn=f"postgresql://corpus_reader@127.0.0.1:{conftest.PG_PORT}/{DB}")


@contextmanager
def services(s: Settings, include: list[str] | None) -> Iterator[str]:
    """The test services (reused when they answer) and the BeCoMe index (built when changed;
    only the files `include` names, when given): its version. What this process started is
    stopped on exit (SIGTERM included)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sup = stack.Supervisor(conftest.VAR / "log")
    try:
        start_services(s, sup, Plan(var_dir=conftest.VAR))
        admin = f"postgresql://postgres@127.0.0.1:{conftest.PG_PORT}/postgres"
        stack.bootstrap_corpus_db(admin, DB, "corpus_owner", "corpus_reader")
        manifest = load_manifest(MANIFEST)
        if include:
            manifest = dataclasses.replace(manifest, include=tuple(include))
        # Ranking never reads the quotes form's span vectors: not embedded here.
        corpus_jobs.build._embed_spans = lambda *_: 0
        t0 = time.monotonic()
        report = build_index(s, manifest)
        print(f"index {report.version}: {report.passages} passages "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
        yield report.version
    finally:
        sup.stop_all()


def configs(s: Settings) -> dict[str, RetrievalConfig]:
    """Every retrieval to rank with: the chat turn's, its settings variants, every preset."""
    chat = RetrievalConfig.from_settings(s)
    out: dict[str, RetrievalConfig] = {"chat": chat, "default": RetrievalConfig()}
    out.update({name: dataclasses.replace(chat, **fields)
                for name, fields in SETTINGS_VARIANTS.items()})
    out.update(ev.PRESETS)
    return out


def translations(s: Settings, questions: list[str]) -> dict[str, str]:
    """Each Czech question's few-shot translation (the offline turn's), once."""
    from worker.pipeline.rewrite import FEWSHOT_PROMPT, translate_fewshot

    out: dict[str, str] = {}
    czech = [q for q in dict.fromkeys(questions) if detect_language(q) == "cs"]
    t0 = time.monotonic()
    for n, q in enumerate(czech, start=1):
        out[q] = translate_fewshot(s.translator, q, 120, FEWSHOT_PROMPT)
        if n % 10 == 0:
            print(f"translated {n}/{len(czech)} ({time.monotonic() - t0:.0f} s)", flush=True)
    return out


def rankings(s: Settings, translated: dict[str, str],
             progress: Callable[[str], None] = print) -> dict[str, Any]:
    """{config: {set: {question id: {"asked": [[id, score]...], "tr": [...]}}}}."""
    questions = {key: ev.load_questions(path) for key, path in SETS.items()}
    out: dict[str, Any] = {}
    with corpus_store.connect(s.corpus_read_dsn, autocommit=True) as conn:
        for name, config in configs(s).items():
            t0 = time.monotonic()
            config = dataclasses.replace(config, candidates=max(config.candidates,
                                                                ev.MRR_DEPTH))
            out[name] = {key: {q.id: _ranked(conn, s, config, q.question, translated)
                               for q in qs} for key, qs in questions.items()}
            progress(f"{name}: {time.monotonic() - t0:.1f} s")
    return out


def _ranked(conn: psycopg.Connection, s: Settings, config: RetrievalConfig, question: str,
            translated: dict[str, str]) -> dict[str, list[list[Any]]]:
    """One question's rankings as asked and, when Czech, as translated (as run_eval ranks)."""
    lang = detect_language(question)
    out = {}
    for how, query in (("asked", question), ("tr", translated.get(question))):
        if query is not None:
            _, ranked, _ = rank(conn, s, config, query, question, limit=ev.MRR_DEPTH,
                                language=lang)
            out[how] = [[pid, score] for pid, score in ranked]
    return out


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Every ranking that moved: its config, set, question and how, with both id lists."""
    out = []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            out.append(f"{name}: only {'after' if name not in before else 'before'}")
            continue
        for key, qs in before[name].items():
            for qid, hows in qs.items():
                now = after[name].get(key, {}).get(qid)
                if now != hows:
                    out.append(f"{name} {key} {qid}: {hows} -> {now}")
    return out


def main() -> None:
    """serve, record or compare."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["serve", "record", "compare"])
    ap.add_argument("file", nargs="?", type=Path, default=Path("var/preset-rankings.json"))
    ap.add_argument("--include", nargs="+", metavar="GLOB",
                    help="serve, record: index only these files of the corpus (the manifest's "
                         "globs otherwise); compare uses the recorded ones")
    ap.add_argument("--no-translation", action="store_true",
                    help="record: rank Czech questions only as asked (no translator)")
    args = ap.parse_args()
    s = test_settings()
    recorded = json.loads(args.file.read_text()) if args.command == "compare" else None
    include = recorded["include"] if recorded is not None else args.include
    with services(s, include) as version:
        if args.command == "serve":
            print(f"serving {s.corpus_read_dsn}; Ctrl-C stops", flush=True)
            while True:
                time.sleep(3600)
        if recorded is None:
            texts = [q.question for path in SETS.values() for q in ev.load_questions(path)]
            translated = {} if args.no_translation else translations(s, texts)
            found = rankings(s, translated)
            args.file.parent.mkdir(parents=True, exist_ok=True)
            args.file.write_text(json.dumps(
                {"index_version": version, "include": include, "translations": translated,
                 "rankings": found}, ensure_ascii=False, indent=0) + "\n")
            print(f"recorded {len(found)} configs, {count(found)} rankings on index "
                  f"{version}: {args.file}")
            return
        if version != recorded["index_version"]:
            sys.exit(f"index {version}, recorded on {recorded['index_version']}: not comparable")
        found = rankings(s, recorded["translations"])
        diff = differences(recorded["rankings"], found)
        for line in diff[:50]:
            print(line)
        print(f"{len(found)} configs, {count(found)} rankings on index {version}: "
              f"{len(diff)} differ")
        if diff:
            sys.exit(1)


def count(found: dict[str, Any]) -> int:
    """How many rankings (config x question x as asked / translated)."""
    return sum(len(hows) for c in found.values() for qs in c.values() for hows in qs.values())


if __name__ == "__main__":
    main()
