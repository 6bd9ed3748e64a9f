"""The `become-assistant` command: run, ask, corpus build, status, token."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from corpus_jobs import client, stack
from shared.auth import mint_access_token
from shared.config import INSECURE_DEV_SECRET, get_settings
from shared.errors import AssistantError, ConfigError

DEFAULT_URL = os.environ.get("ASSISTANT_URL", "http://127.0.0.1:8000")


def _app_token(user: str) -> str:
    token = os.environ.get("ASSISTANT_TOKEN")
    if token:
        return token
    settings = get_settings()
    if settings.production or settings.app_jwt_secret != INSECURE_DEV_SECRET:
        raise ConfigError("set ASSISTANT_TOKEN to an app access token (tokens are minted here "
                          "only in dev, with the dev secret)")
    return mint_access_token(user, settings.app_jwt_secret)


def cmd_token(args: argparse.Namespace) -> int:
    """Mint a dev app token (dev and test only, with the dev secret)."""
    settings = get_settings()
    if settings.production or settings.app_jwt_secret != INSECURE_DEV_SECRET:
        print("token minting needs the dev profile and the dev secret: it is refused while "
              "ASSISTANT_APP_JWT_SECRET is a real app secret", file=sys.stderr)
        return 2
    print(mint_access_token(args.user, settings.app_jwt_secret, args.ttl))
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    """Ask over ticket + WebSocket, print the streamed answer and then the sources."""
    def on_frame(frame: dict) -> None:
        if frame["type"] == "token":
            print(frame["text"], end="", flush=True)

    try:
        _frames, last = client.ask(args.url, _app_token(args.user), args.question,
                                   on_frame=on_frame, project_id=args.project)
    except client.ClientError as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    print()
    if last["type"] == "error":
        print(f"error {last['code']}: {last['message']}", file=sys.stderr)
        return 1
    checks = last.get("checks", {})
    if not checks.get("citations", {}).get("valid", True):
        print(f"warning: invalid citations {checks['citations']['invalid']}", file=sys.stderr)
    numbers = checks.get("numbers", {})
    if not numbers.get("valid", True):
        print(f"warning: numbers not confirmed by the sources: "
              f"{', '.join(numbers.get('unconfirmed', []))}", file=sys.stderr)
    if last.get("sources"):
        print("\nSources:")
        for s in last["sources"]:
            print(f"  [{s['n']}] {s['title']} — {s['section']} ({s['source']}, score {s['score']})")
    print(f"\n(index {last.get('index')}, {last.get('timing', {}).get('total_ms')} ms)")
    return 0


def cmd_corpus_build(args: argparse.Namespace) -> int:
    """Build the index now, under the same lock as scheduled rebuilds."""
    import dataclasses

    from corpus_jobs.build import locked_build
    from corpus_jobs.manifest import load_manifest

    settings = get_settings()
    if args.dsn:
        settings = dataclasses.replace(settings, corpus_dsn=args.dsn)
    try:
        stack.ensure_corpus_database(settings.corpus_dsn, settings.corpus_read_dsn)
        stack.probe_vector(settings.corpus_dsn)
    except stack.StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def progress(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        print(f"\rembedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total}",
              end="", file=sys.stderr, flush=True)

    report = locked_build(settings, load_manifest(args.manifest or settings.corpus_manifest),
                          force=args.force, progress=progress)
    if report is None:
        print("another rebuild is running; nothing done", file=sys.stderr)
        return 3
    print(json.dumps(report.__dict__, indent=2) if args.json else
          f"\nindex {report.version}: {'unchanged (no-op)' if report.no_op else 'built'}; "
          f"{report.documents} documents, {report.passages} passages, "
          f"{report.embedded} embedded, {report.seconds:.1f}s")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Print /healthz; exit 1 when a component is down."""
    try:
        status, body = client.http_json("GET", f"{args.url}/healthz")
    except client.ClientError as exc:
        print(f"web: down ({exc})")
        return 1
    for name, comp in (body or {}).get("components", {}).items():
        extra = {k: v for k, v in comp.items() if k != "ok"}
        print(f"{name:22} {'ok ' if comp['ok'] else 'DOWN'} {json.dumps(extra)}")
    return 0 if status == 200 else 1


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    """Score retrieval on a question file; optionally compare two settings by bootstrap."""
    import dataclasses

    from shared import corpus_store
    from worker import evaluation

    settings = get_settings()
    questions = evaluation.load_questions(args.questions)

    def run(spec: str) -> dict:
        # "NAME+fewshot" / "NAME+chat": translate Czech questions first, on this side only.
        name, _, how = spec.partition("+")
        config, extra = evaluation.load_config(name)
        dsn = extra.get("corpus_read_dsn") or args.dsn or settings.corpus_read_dsn
        s = dataclasses.replace(settings, corpus_read_dsn=dsn)
        translate = None
        role = s.translation
        how = how or ("fewshot" if args.translate_fewshot else "chat" if args.translate else "")
        if how not in ("", "fewshot", "chat"):
            raise ConfigError(f"unknown translation {how!r}: +fewshot or +chat")
        if how:
            from worker.pipeline.rewrite import translate_fewshot, translate_for_search

            step = translate_fewshot if how == "fewshot" else translate_for_search
            role = s.translator if how == "fewshot" else s.translation

            def translate(text: str) -> tuple[str, str]:
                return step(role, text, timeout_s=120), text

        report = evaluation.run_eval(
            s, config, questions, lambda: corpus_store.connect(dsn, autocommit=True),
            translate)
        report["name"] = name + (f"+{how}" if how else "")
        report["translation_model"] = role.model if translate is not None else None
        return report

    def show(r: dict) -> None:
        o = r["overall"]
        print(f"{r['name']:>16}  all  hit@1 {o['hit@1']:.2f}  hit@3 {o['hit@3']:.2f}  "
              f"hit@5 {o['hit@5']:.2f}  MRR {o['mrr']:.2f}  (n={o['n']}, index "
              f"{r['index_version']})")
        for lang, m in r["by_language"].items():
            print(f"{'':>16}  {lang:<4} hit@1 {m['hit@1']:.2f}  hit@3 {m['hit@3']:.2f}  "
                  f"hit@5 {m['hit@5']:.2f}  MRR {m['mrr']:.2f}  (n={m['n']})")

    out: dict = {"questions_file": str(args.questions)}
    a = run(args.settings)
    show(a)
    out["a"] = a
    if args.compare:
        b = run(args.compare)
        show(b)
        out["b"] = b
        out["comparison"] = cmp = evaluation.compare(a, b)
        scopes = [("all", cmp)] + list(cmp.get("by_language", {}).items())
        for scope, part in scopes:
            for metric in ("hit@3", "mrr"):
                c = part[metric]
                verdict = "differs" if c["excludes_zero_95"] else "no clear difference"
                print(f"{args.compare} - {args.settings} {scope:<3} {metric}: "
                      f"{c['mean_diff']:+.3f}  90% [{c['ci90'][0]:+.3f}, {c['ci90'][1]:+.3f}]  "
                      f"95% [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}]  -> {verdict}")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
        print(f"report: {args.out}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Start every process in the foreground (make run)."""
    from corpus_jobs.run import Plan, choose_manifest, run_forever

    # Every child (worker, beat's nightly rebuild, web) reads the manifest from the environment.
    os.environ["ASSISTANT_CORPUS_MANIFEST"] = choose_manifest(args.manifest)
    get_settings.cache_clear()
    return run_forever(get_settings(), Plan(var_dir=Path(args.var).resolve(),
                                            web_bind=args.bind, flower_port=args.flower_port))


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="become-assistant")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="start everything (services, models, index, worker, beat, "
                                   "Flower, web)")
    r.add_argument("--var", default="var")
    r.add_argument("--bind", default=os.environ.get("ASSISTANT_WEB_BIND", "127.0.0.1:8000"))
    r.add_argument("--flower-port", type=int, default=5555)
    r.add_argument("--manifest", default=None,
                   help="corpus manifest to serve (default: ASSISTANT_CORPUS_MANIFEST, else the "
                        "BeCoMe documentation when at hand, else the assistant's own docs)")
    r.set_defaults(func=cmd_run)
    a = sub.add_parser("ask", help="ask a question and stream the answer")
    a.add_argument("question")
    a.add_argument("--url", default=DEFAULT_URL)
    a.add_argument("--user", default="cli-user")
    a.add_argument("--project", default=None)
    a.set_defaults(func=cmd_ask)
    c = sub.add_parser("corpus", help="corpus jobs")
    csub = c.add_subparsers(dest="corpus_command", required=True)
    b = csub.add_parser("build", help="build the index (a no-op when nothing changed)")
    b.add_argument("--manifest", default=None)
    b.add_argument("--force", action="store_true")
    b.add_argument("--json", action="store_true")
    b.add_argument("--dsn", default=None, help="owner DSN (default ASSISTANT_CORPUS_DSN)")
    b.set_defaults(func=cmd_corpus_build)
    e = sub.add_parser("eval", help="evaluation")
    esub = e.add_subparsers(dest="eval_command", required=True)
    er = esub.add_parser("retrieval", help="hit@1/3/5 and MRR on a question file")
    er.add_argument("--questions", required=True)
    er.add_argument("--settings", default="hybrid", help="preset name or TOML file")
    er.add_argument("--compare", default=None, help="second settings, compared by bootstrap")
    er.add_argument("--dsn", default=None, help="read DSN of the index to evaluate")
    er.add_argument("--out", default=None, help="write the JSON report here")
    er.add_argument("--translate", action="store_true",
                    help="translate Czech questions with the translation role first")
    er.add_argument("--translate-fewshot", action="store_true",
                    help="translate Czech questions first with a few-shot completion prompt "
                         "(a base model such as Gemma 3 270M on the translation role)")
    er.set_defaults(func=cmd_eval_retrieval)
    # --- eval answers / eval seal (issue 14): all of it lives in corpus_jobs/eval_cli.py ---
    from corpus_jobs import eval_cli

    eval_cli.add_parsers(esub, DEFAULT_URL, _app_token)
    # --- end of eval answers / eval seal ---
    s = sub.add_parser("status", help="component health")
    s.add_argument("--url", default=DEFAULT_URL)
    s.set_defaults(func=cmd_status)
    t = sub.add_parser("token", help="mint a dev app token")
    t.add_argument("--user", required=True)
    t.add_argument("--ttl", type=int, default=900)
    t.set_defaults(func=cmd_token)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except AssistantError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
