"""Time to the first word with the real local model (SmolLM2-135M on llama.cpp), as a person
waits for it: the client sends `ask` -> the client receives the first `token` frame, through the
real web server, Redis, Celery worker, retrieval and model server. Documentation questions and
project questions (the demo app's 60-opinion "Regional flood plan", read with alice's token),
each with the prompt's token count from the done frame's usage. Each turn is stopped after its
first word (the rest of the answer is not what is measured).

Run: .venv/bin/python -m bench.first_word --questions 20
     .venv/bin/python -m bench.first_word --questions 20 --form quotes   # no model call
With --form quotes the documentation questions are asked in Czech too (the translation step
runs before the first word); `--czech-from FILE...` asks every Czech question of those question
files instead of the ten below (a steadier p95):
    .venv/bin/python -m bench.first_word --form quotes --only docs \
        --czech-from bench/retrieval/heldout.jsonl bench/retrieval/heldout-fresh.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable

from simple_websocket import Client

from assistant_cli.client import ws_url
from assistant_cli.demo import bootstrap_demo_db, start_demo_app
from demo_app.seed import FLOOD_PLAN
from shared.config import settings_from_env
from tests import conftest
from tests.wsutil import app_token, get_ticket

DOC_QUESTIONS = [
    "How does the search work?", "What does the assistant send to the model?",
    "How are citations checked?", "What happens when a worker dies mid-answer?",
    "How do I rebuild the index?", "Which models run locally?", "What is a ticket?",
    "How long is a ticket valid?", "How do I stop an answer?", "What is the replay log?",
    "How are numbers checked?", "Which languages are supported?",
    "How do I run the assistant?", "What does the status command show?",
    "Where are traces stored?", "How is the conversation history trimmed?",
    "What does the done frame contain?", "How are Czech questions searched?",
    "What is BM25 used for?", "How does the panel show sources?",
]
CZECH_QUESTIONS = [
    "Jak funguje vyhledávání?", "Co asistent posílá modelu?", "Jak se kontrolují citace?",
    "Co se stane, když worker spadne uprostřed odpovědi?", "Jak znovu sestavím index?",
    "Které modely běží lokálně?", "Co je to lístek (ticket)?", "Jak zastavím odpověď?",
    "Jak se kontrolují čísla?", "Které jazyky asistent podporuje?",
]
PROJECT_QUESTIONS = [
    "What is the best compromise of my project?", "How far apart are the experts?",
    "What is the maximum error here?", "Which expert is furthest from the compromise?",
    "What is the median of the opinions?", "How many experts gave an opinion?",
    "Is the mean close to the median?", "What does the result mean for the flood plan?",
    "What is the scale of the project?", "How much do the experts agree?",
    "What is the arithmetic mean?", "Who has the lowest estimate?",
    "Who has the highest estimate?", "Summarise the opinions.",
    "Is the result reliable?", "What is the peak of the best compromise?",
    "How wide is the best compromise?", "Explain the result simply.",
    "What would change with one more expert?", "Why is there a maximum error?",
]


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank)."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * len(s)) - 1))]


# Where the time before the first word goes, per question: each step's ms from the turn's
# `event` frames, and "worker start" (the first step's start: web, queue and Celery pick-up).
STEPS: list[dict[str, float]] = []


def first_words(base_url: str, token: Callable[[], str], questions: list[str],
                project: str | None, count: Callable[[str], int]) -> list[tuple[float, int]]:
    """(seconds to the first token, prompt tokens) per question."""
    out = []
    STEPS.clear()
    for q in questions:
        # A fresh token per question: a dev token lives 15 minutes, a run is longer.
        ws = Client.connect(ws_url(base_url, get_ticket(base_url, token())))
        try:
            t0 = time.perf_counter()
            ws.send(json.dumps({"type": "ask", "message": q, "project_id": project}))
            first = None
            usage = 0
            steps: dict[str, float] = {}
            while True:
                raw = ws.receive(timeout=180)
                if raw is None:
                    raise SystemExit(f"no frame in 180 s for {q!r}")
                f = json.loads(raw)
                if f["type"] == "token" and first is None:
                    first = time.perf_counter() - t0
                if f["type"] == "event" and first is None and f.get("step"):
                    if f.get("cut"):
                        steps["cut"] = 1.0  # the translator's deadline cut its line
                    steps.setdefault("worker start", float(f.get("start_ms") or 0))
                    steps[str(f["step"])] = steps.get(str(f["step"]), 0.0) + float(
                        f.get("ms") or 0)
                if f["type"] == "done":
                    usage = int((f.get("usage") or {}).get("prompt_tokens") or 0)
                if f["type"] in ("done", "error"):
                    if f["type"] == "error" and first is None:
                        raise SystemExit(f"turn failed: {f.get('message')}")
                    break
        finally:
            ws.close()
        assert first is not None
        STEPS.append(steps)
        out.append((first, usage or count(q)))
        print(f"  {first:6.2f} s  prompt {out[-1][1]:5d} tokens  {q}", file=sys.stderr, flush=True)
    return out


def prompt_tokens(st: conftest.Stack, question: str, project_text: str | None) -> int:
    """The answer prompt's tokens for a question, counted by the model server's tokenizer on the
    same messages the worker builds (llama.cpp's streamed usage is empty), in ChatML."""
    from shared.language import detect_language
    from worker.db import corpus_connection
    from worker.pipeline.prompt import build_messages
    from worker.pipeline.retrieve import retrieve

    with corpus_connection(st.settings) as conn:
        retrieval = retrieve(conn, st.settings, question, original=question)
    messages = build_messages(question, (), retrieval, detect_language(question), project_text)
    chatml = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    chatml += "<|im_start|>assistant\n"
    base = st.settings.answer.base_url.removesuffix("/v1")
    req = urllib.request.Request(f"{base}/extras/tokenize/count",
                                 json.dumps({"input": chatml}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return int(json.loads(r.read())["count"])


def alice_token(demo_app: str) -> str:
    form = urllib.parse.urlencode({"username": "alice@example.com",
                                   "password": "demo-password"}).encode()
    with urllib.request.urlopen(f"{demo_app}/api/v1/auth/login", form, timeout=10) as r:
        return str(json.loads(r.read())["access_token"])


def step_report(name: str, steps: list[dict[str, float]]) -> str:
    """Median and p95 of each step before the first word (ms)."""
    names = list(dict.fromkeys(k for st in steps for k in st
                               if k not in ("first_token", "cut")))
    cells = [f"{k} {pct([st.get(k, 0.0) for st in steps], 0.5):.0f}/"
             f"{pct([st.get(k, 0.0) for st in steps], 0.95):.0f}" for k in names]
    cut = sum(1 for st in steps if st.get("cut"))
    return f"{name} steps, ms p50/p95: " + ", ".join(cells) + (
        f"; the translator's deadline cut {cut} of {len(steps)}" if cut else "")


def report(name: str, rows: list[tuple[float, int]]) -> str:
    times = [r[0] for r in rows]
    tokens = sorted(r[1] for r in rows)
    return (f"| {name} | {len(rows)} | {pct(times, 0.5):.2f} s | {pct(times, 0.95):.2f} s | "
            f"{tokens[len(tokens) // 2]} (from {tokens[0]} to {tokens[-1]}) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=20, help="questions of each kind (max 20)")
    ap.add_argument("--only", choices=["docs", "project"], default=None,
                    help="measure one kind of question only")
    ap.add_argument("--form", choices=["prose", "quotes"], default="prose",
                    help="the answer form (quotes: written in code, no model call)")
    ap.add_argument("--translate-deadline", type=float, default=None, metavar="S",
                    help="the translator's deadline (default: the setting's own default; the "
                         "test stacks' 60 s would measure no deadline)")
    ap.add_argument("--czech-from", nargs="+", default=None, metavar="FILE",
                    help="ask every Czech question of these question files (JSONL) instead of "
                         "the built-in ten")
    args = ap.parse_args()
    n = max(1, min(args.questions, 20))
    deadline = args.translate_deadline or settings_from_env({}).translate_deadline_s
    czech_questions = CZECH_QUESTIONS[:n]
    if args.czech_from:
        from worker.evaluation import load_questions

        czech_questions = [q.question for path in args.czech_from
                           for q in load_questions(path) if q.language == "cs"]
    with conftest.bench_services() as (sup, _scripted):
        dsn = bootstrap_demo_db(f"postgresql://postgres@127.0.0.1:{conftest.PG_PORT}/postgres")
        demo_app = start_demo_app(sup, conftest.port(8031), dsn, conftest.stack_env({}))
        st = conftest.start_stack(sup, "bench-first-word", conftest.WEB_PORT + 20, {
            "ASSISTANT_REDIS_URL": conftest.redis_url(9),
            "ASSISTANT_APP_API_URL": demo_app, "ASSISTANT_ANSWER_FORM": args.form,
            "ASSISTANT_TRANSLATE_DEADLINE_S": str(deadline)})
        from web.project.app_api import AppApi, read_project_context

        try:
            token = alice_token(demo_app)
            context, _ms = read_project_context(AppApi(demo_app, 10), token, FLOOD_PLAN)

            def doc_count(q: str) -> int:
                return 0 if args.form == "quotes" else prompt_tokens(st, q, None)

            def project_count(q: str) -> int:
                return 0 if args.form == "quotes" else prompt_tokens(st, q, context.text)

            # One warm-up turn of each kind (model load, connections).
            docs: list[tuple[float, int]] = []
            czech: list[tuple[float, int]] = []
            projects: list[tuple[float, int]] = []
            steps: dict[str, list[dict[str, float]]] = {}
            if args.only != "project":
                first_words(st.base_url, lambda: app_token(st), ["What is BeCoMe?"], None, doc_count)
                docs = first_words(st.base_url, lambda: app_token(st), DOC_QUESTIONS[:n], None,
                                   doc_count)
                steps["documentation"] = list(STEPS)
                if args.form == "quotes":
                    czech = first_words(st.base_url, lambda: app_token(st),
                                        czech_questions, None, doc_count)
                    steps["documentation, Czech"] = list(STEPS)
            if args.only != "docs":
                first_words(st.base_url, lambda: alice_token(demo_app), ["What is my project about?"], FLOOD_PLAN,
                            project_count)
                projects = first_words(st.base_url, lambda: alice_token(demo_app), PROJECT_QUESTIONS[:n], FLOOD_PLAN,
                                       project_count)
                steps["project"] = list(STEPS)
        finally:
            st.sup.stop_all()
    print("| questions | n | first word p50 | p95 | prompt tokens (median, range) |")
    print("|---|---|---|---|---|")
    if docs:
        print(report("documentation", docs))
    if czech:
        print(report("documentation, Czech", czech))
    if projects:
        print(report("project (60 opinions)", projects))
    for name, rows in steps.items():
        print(step_report(name, rows))


if __name__ == "__main__":
    main()
