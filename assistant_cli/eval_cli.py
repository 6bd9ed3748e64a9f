"""CLI glue of `eval answers` and `eval seal`: setups, stacks, the WebSocket client, judges."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from assistant_cli import client, stack
from shared.config import ModelRole, get_settings
from shared.errors import BadRequest, Unavailable

DEFAULT_LEDGER = "var/eval/seals.jsonl"
TokenFn = Callable[[str], str]


def parse_judge(spec: str) -> ModelRole:
    """`[local:|api:]MODEL@BASE_URL` as a judge role (the hosted key only for `api`)."""
    provider, _, rest = spec.partition(":") if spec.split(":", 1)[0] in ("local", "api") \
        else ("local", "", spec)
    model, sep, base = rest.rpartition("@")
    if not sep or not model or not base.startswith(("http://", "https://")):
        raise BadRequest(f"--judge {spec!r}: write [local:|api:]MODEL@BASE_URL")
    # The one hosted key (ASSISTANT_API_KEY); ModelRole sends it to `api` roles only.
    return ModelRole("judge", provider, model, base.rstrip("/"), get_settings().answer.api_key)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(setup: Any, slot: str, var: Path) -> Iterator[tuple[str, bool]]:
    """The setup's base URL: its own, or a web + worker started here with its [env]."""
    if setup.url:
        yield setup.url, False
        return
    from assistant_cli.run import Plan, start_processes

    env = {k: v for k, v in os.environ.items()}
    env.update(dict(setup.env))
    bind = f"127.0.0.1:{_free_port()}"
    sup = stack.Supervisor(var / "log")
    try:
        start_processes(sup, Plan(var_dir=var, name=f"eval-{slot.lower()}", web_bind=bind,
                                  web_workers=1, worker_concurrency=2, beat=False,
                                  flower=False), env=env)
        yield f"http://{bind}", True
    except stack.StackError as exc:
        raise Unavailable(f"could not start setup {setup.name}: {exc}") from None
    finally:
        sup.stop_all()


# How long a run waits in all for the stack's limits (a question set larger than the
# per-address quota, 20 a minute by default) before it stops and can be resumed.
LIMIT_WAIT_S = 900


def asker(base_url: str, token: str, timeout_s: float,
          sleep: Callable[[float], None] = time.sleep) -> Callable[[str], list[dict[str, Any]]]:
    """Ask one question over ticket + WebSocket; a limit's refusal is waited out (up to
    LIMIT_WAIT_S in all), any other refused connection stops the run."""
    waited = 0.0

    def ask(text: str) -> list[dict[str, Any]]:
        nonlocal waited
        while True:
            try:
                frames, _ = client.ask(base_url, token, text, timeout_s=timeout_s)
                return frames
            except client.ClientError as exc:
                if exc.retry_after is None or waited + exc.retry_after > LIMIT_WAIT_S:
                    raise Unavailable(f"{base_url}: {exc}; run the same command again to "
                                      "resume", public_message=str(exc)) from None
                print(f"the stack's limit: waiting {exc.retry_after} s ({exc})",
                      file=sys.stderr, flush=True)
                sleep(exc.retry_after + 1)
                waited += exc.retry_after + 1
    return ask


def passage_lookup(dsn: str) -> Callable[[str, str], str | None]:
    """Full passage text by (source, section) from an index; None when it is not reachable."""
    import psycopg

    from shared import corpus_store
    from shared.errors import AssistantError

    cache: dict[tuple[str, str], str | None] = {}

    def lookup(source: str, section: str) -> str | None:
        if (source, section) not in cache:
            try:
                with corpus_store.connect(dsn, autocommit=True) as conn:
                    row = conn.execute(
                        f"SELECT text FROM {corpus_store.LIVE_TABLE} WHERE source = %s AND "
                        "section = %s ORDER BY id LIMIT 1", (source, section)).fetchone()
            except (AssistantError, psycopg.Error):
                row = None
            cache[(source, section)] = str(row[0]) if row else None
        return cache[(source, section)]
    return lookup


def section_texts(dsn: str) -> Callable[[str, str], list[str]]:
    """Every chunk's text of a section by (source, section); empty when not reachable."""
    import psycopg

    from shared import corpus_store
    from shared.errors import AssistantError

    def texts(source: str, section: str) -> list[str]:
        try:
            with corpus_store.connect(dsn, autocommit=True) as conn:
                rows = conn.execute(
                    f"SELECT text FROM {corpus_store.LIVE_TABLE} WHERE source = %s AND "
                    "section = %s ORDER BY id", (source, section)).fetchall()
        except (AssistantError, psycopg.Error):
            return []
        return [str(r[0]) for r in rows]
    return texts


def cmd_eval_answers(args: argparse.Namespace, app_token: TokenFn) -> int:
    """Run every question through the real path, judge blind, compare, report."""
    from worker.eval_answers import harness
    from worker.eval_answers.questions import load_answer_questions
    from worker.eval_answers.setup import load_setup, provenance

    settings = get_settings()
    # Bad input is refused before any stack starts or any question is asked.
    load_answer_questions(args.questions)
    if not 0 <= args.second_share <= 1:
        raise BadRequest("--second-share must be between 0 and 1")
    if args.max_questions is not None and args.max_questions < 1:
        raise BadRequest("--max-questions must be at least 1")
    specs = [("A", args.setup)] + ([("B", args.compare)] if args.compare else [])
    setups = [(slot, load_setup(path, args.url)) for slot, path in specs]
    first = None if args.no_judge else (parse_judge(args.judge) if args.judge
                                        else settings.judge)
    if first is None and not args.no_judge:
        raise BadRequest("no judge role: set ASSISTANT_JUDGE_MODEL and "
                         "ASSISTANT_JUDGE_BASE_URL, or pass --judge MODEL@URL (or --no-judge)")
    second = (parse_judge(args.second_judge) if args.second_judge else first) \
        if first is not None and args.second_share > 0 else None
    token = app_token(args.user)
    out = Path(args.out)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with contextlib.ExitStack() as es:
        targets = []
        for slot, setup in setups:
            url, started = es.enter_context(serving(setup, slot, Path(args.var)))
            prov = {**provenance(setup), "url": url, "started": started}
            targets.append(harness.Target(slot, prov, asker(url, token, args.timeout)))
        result = harness.evaluate(
            out, args.questions, targets, harness.Judges(first, second, args.second_share),
            args.ledger, rule=args.rule, max_new=args.max_questions, progress=progress,
            command="become-assistant " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            hosted=harness.Hosted(args.price_in, args.price_out, args.hosted_tokens_per_s,
                                  args.hosted_first_token_s),
            lookup=passage_lookup(args.dsn or settings.corpus_read_dsn),
            texts=section_texts(args.dsn or settings.corpus_read_dsn))
    if not result["complete"]:
        print(f"stopped with {result['missing']} answers still to collect; run the same "
              "command again to resume", file=sys.stderr)
        return 3
    for slot, s in result["setups"].items():
        o = s["metrics"]["overall"]
        print(f"{slot} {s['provenance']['name']}: facts delivered {o['facts_delivered']}, "
              f"unsupported claims {o['unsupported_claims']}, number flags "
              f"{o['number_flags']}, invalid citations {o['invalid_citations']}, prompt "
              f"echoes {o['prompt_echo']}, language match {o['language_match']} (n={o['n']})")
        for lang, m in sorted(s["metrics"]["by_language"].items()):
            print(f"  {lang}: first quote from the expected section "
                  f"{_share(m, 'first_quote_expected')}, I don't know on answerable "
                  f"{_share(m, 'dont_know_answerable')} / unanswerable "
                  f"{_share(m, 'dont_know')}, prompt echoes {_share(m, 'prompt_echo')}, "
                  f"quotes verbatim {_share(m, 'quotes_verbatim')}")
        for w in s.get("warnings") or ():
            print(f"  warning: {w}")
        if s.get("acceptance"):
            print(f"  rule {s['acceptance']['rule']!r}: "
                  f"{'accepted' if s['acceptance']['accepted'] else 'NOT accepted'}")
    for metric, c in (result.get("comparison") or {}).items():
        print(f"B - A {metric}: {c['mean_diff']:+.3f} 95% [{c['ci95'][0]:+.3f}, "
              f"{c['ci95'][1]:+.3f}] -> {c['verdict']}")
    print(f"report: {result['report']}")
    return 0


def _share(metrics: dict[str, Any], name: str) -> str:
    """A metric as "0.85 (n=20)", or "-" where it applies to no question."""
    value = metrics.get(name)
    return "-" if value is None else f"{value:.2f} (n={metrics.get(name + '_n')})"


def cmd_eval_seal(args: argparse.Namespace) -> int:
    """Record a question file's hash and acceptance rule before any run on it."""
    from worker.eval_answers import seal, stats

    record = seal.seal(args.file, args.rule, args.out, args.ledger, stats.KNOWN)
    print(f"sealed {record['file']} (sha256 {record['sha256'][:16]}…) with the rule "
          f"{record['rule']!r} in {Path(args.out) / seal.SEAL_FILE}")
    return 0


def add_parsers(esub: Any, default_url: str, app_token: TokenFn) -> None:
    """The `eval answers` and `eval seal` subcommands."""
    a = esub.add_parser("answers", help="answer quality: the real path, blind judges, "
                                        "paired bootstrap, HTML report")
    a.add_argument("--questions", required=True, help="the question file (JSON lines)")
    a.add_argument("--setup", default=None, help="setup TOML (default: the stack at --url)")
    a.add_argument("--compare", default=None, help="second setup TOML, compared to the first")
    a.add_argument("--judge", default=None, help="[local:|api:]MODEL@URL (default: "
                                                 "ASSISTANT_JUDGE_*)")
    a.add_argument("--second-judge", default=None, help="default: the first judge")
    a.add_argument("--second-share", type=float, default=0.25,
                   help="share of answers the second judge grades (default: %(default)s)")
    a.add_argument("--no-judge", action="store_true", help="grade in code only")
    a.add_argument("--rule", default=None, help="acceptance rule, e.g. "
                                                "'facts_delivered >= 0.47'")
    a.add_argument("--out", required=True, help="run directory (resumed when it exists)")
    a.add_argument("--url", default=default_url, help="the assistant's address")
    a.add_argument("--user", default="eval-user", help="user of the dev token")
    a.add_argument("--timeout", type=float, default=300.0, help="seconds per answer")
    a.add_argument("--max-questions", type=int, default=None,
                   help="ask at most this many new questions now (resume later)")
    a.add_argument("--ledger", default=DEFAULT_LEDGER, help="the ledger of sealed runs")
    a.add_argument("--dsn", default=None, help="read DSN of the index the setups answer from "
                                               "(passage text for the judge)")
    a.add_argument("--var", default="var", help="folder for data and logs")
    a.add_argument("--price-in", type=float, default=0.15, help="USD per M input tokens")
    a.add_argument("--price-out", type=float, default=0.60, help="USD per M output tokens")
    a.add_argument("--hosted-tokens-per-s", type=float, default=80.0,
                   help="assumed speed of a hosted model, for the cost estimate")
    a.add_argument("--hosted-first-token-s", type=float, default=0.6,
                   help="assumed first-token delay of a hosted model")
    a.set_defaults(func=lambda args: cmd_eval_answers(args, app_token))
    s = esub.add_parser("seal", help="record a question file's hash and acceptance rule")
    s.add_argument("file", help="the question file to seal")
    s.add_argument("--rule", required=True, help="acceptance rule, e.g. 'facts_delivered >= 0.47'")
    s.add_argument("--out", required=True, help="the run directory")
    s.add_argument("--ledger", default=DEFAULT_LEDGER, help="the ledger of sealed runs")
    s.set_defaults(func=cmd_eval_seal)
