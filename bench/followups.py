"""Follow-up questions through a running stack: each conversation's earlier question is asked,
then the follow-up with the earlier turn as history, as the panel sends it. Per language and
kind: does the follow-up's first quote come from the expected section, is the expected section
among the quoted ones, and how often does it get "I don't know".

    .venv/bin/python -m bench.followups [--set bench/retrieval/followups.jsonl]
        [--url http://127.0.0.1:8000] [--out followups.json]
    .venv/bin/python -m bench.followups --compare BEFORE.json AFTER.json   # paired bootstrap

Needs `make run` up (any answer form; the quotes form is the default). Each conversation has a
user of its own (a dev token of `become-assistant token`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from assistant_cli.client import ClientError, stream_turn
from shared import corpus_store
from shared.config import settings_from_env
from worker.evaluation import location_matches, paired_bootstrap

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SET = REPO / "bench" / "retrieval" / "followups.jsonl"


def _token(user: str) -> str:
    out = subprocess.run([str(REPO / ".venv" / "bin" / "become-assistant"), "token", "--user",
                          user], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def _done(url: str, token: str, message: str, history: list[dict[str, str]]) -> dict[str, Any]:
    """The turn's done frame, with `carried`: whether its rewrite step carried the history."""
    for _ in range(5):
        carried = False
        try:
            for frame in stream_turn(url, token, message, history):
                if frame["type"] == "event" and frame.get("step") == "rewrite":
                    carried = bool(frame.get("carried"))
                if frame["type"] == "done":
                    return {**frame, "carried": carried}
                if frame["type"] == "error":
                    raise RuntimeError(f"error frame: {frame}")
        except ClientError as exc:
            if exc.code != 429:
                raise
            time.sleep(20)  # `make run`'s per-address limit: wait, ask again
    raise RuntimeError("no done frame")


def _targets(row: dict) -> list[tuple[str, str]]:
    return [(row["expected_source"], row["expected_location"] or ""),
            *((a["source"], a.get("location", "")) for a in row.get("also_in") or ())]


def _quoted(done: dict, passages: dict[tuple[str, str], Any]) -> list[Any]:
    """The passages the answer's quotes come from, in quote order."""
    structured = done.get("structured") or {}
    sources = {s["n"]: s for s in done.get("sources") or []}
    out = []
    for q in structured.get("quotes") or []:
        s = sources.get(q.get("n"))
        if s is not None:
            out.append(passages.get((s["source"], s.get("key") or s.get("section") or "")))
    return out


def compare(before: list[dict], after: list[dict]) -> None:
    """AFTER minus BEFORE per kind and language, paired by conversation, with the bootstrap's
    95% interval."""
    b = {r["id"]: r for r in before}
    print("| kind | language | n | first quote | any quote | same answer |")
    print("|---|---|---|---|---|---|")
    for kind in ("followup", "standalone"):
        for lang in ("en", "cs", None):
            rows = [r for r in after if r["kind"] == kind and lang in (None, r["language"])]
            cells = []
            for field in ("first", "any", "same_answer"):
                x = [float(b[r["id"]][field]) for r in rows]
                y = [float(r[field]) for r in rows]
                d = paired_bootstrap(x, y)
                cells.append(f"{sum(x) / len(x):.2f} -> {sum(y) / len(y):.2f} "
                             f"({d['mean_diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}])")
            print(f"| {kind} | {lang or 'both'} | {len(rows)} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), default=None,
                    help="compare two --out files instead of asking")
    ap.add_argument("--set", default=str(DEFAULT_SET))
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--out", default=None, help="write every conversation's result (JSON)")
    args = ap.parse_args(argv)
    if args.compare:
        compare(*(json.loads(Path(f).read_text()) for f in args.compare))
        return
    rows = [json.loads(line) for line in Path(args.set).read_text().splitlines() if line.strip()]
    settings = settings_from_env()
    with corpus_store.connect(settings.corpus_read_dsn, autocommit=True) as conn:
        every = corpus_store.all_passages(conn)
    by_key = {(p.source, p.section): p for p in every}
    results = []
    for row in rows:
        # A user of its own per conversation: `make run`'s per-user hourly limit.
        token = _token(f"bench-{row['id']}")
        first = _done(args.url, token, row["history"][0], [])
        history = [{"role": "user", "content": row["history"][0]},
                   {"role": "assistant", "content": first["answer"]}]
        done = _done(args.url, token, row["question"], history)
        quoted = [p for p in _quoted(done, by_key) if p is not None]
        hits = [any(location_matches(p, s, loc) for s, loc in _targets(row)) for p in quoted]
        outcome = (done.get("structured") or {}).get("outcome")
        results.append({"id": row["id"], "language": row["language"], "kind": row["kind"],
                        "outcome": outcome, "first": bool(hits and hits[0]),
                        "any": any(hits), "carried": done["carried"],
                        "repeat_flag": not (done.get("checks") or {}).get(
                            "repeat", {}).get("valid", True),
                        "same_answer": done["answer"] == first["answer"],
                        "answer": done["answer"][:300]})
        print(f"{row['id']} {row['language']} {row['kind']:10} {outcome:8} "
              f"first={int(results[-1]['first'])} any={int(results[-1]['any'])}",
              file=sys.stderr)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in results:
        groups[(r["language"], r["kind"])].append(r)
    print("| language | kind | n | first quote | any quote | I don't know | same answer "
          "| repeat flagged | carried |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (lang, kind), rs in sorted(groups.items()):
        n = len(rs)
        print(f"| {lang} | {kind} | {n} | {sum(r['first'] for r in rs) / n:.2f} | "
              f"{sum(r['any'] for r in rs) / n:.2f} | "
              f"{sum(r['outcome'] != 'answer' for r in rs) / n:.2f} | "
              f"{sum(r['same_answer'] for r in rs) / n:.2f} | "
              f"{sum(r['repeat_flag'] for r in rs) / n:.2f} | "
              f"{sum(r['carried'] for r in rs) / n:.2f} |")
    if args.out:
        Path(args.out).write_text(json.dumps(results, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
