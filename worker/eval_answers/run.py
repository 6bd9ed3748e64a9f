"""A run directory: provenance, answers collected through the real path, judgements; resumable."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from shared.config import ModelRole
from shared.errors import AssistantError, BadRequest
from worker.eval_answers import judge as judging
from worker.eval_answers.questions import AnswerQuestion

RUN_FILE = "run.json"
BLIND_FILE = "blind.json"
JUDGEMENTS_FILE = "judgements.jsonl"
# Asks one question through ticket + WebSocket; returns the turn's frames in order.
Ask = Callable[[str], list[dict[str, Any]]]
Progress = Callable[[str], None]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Records of a JSON-lines file; a last line cut off by an interruption is dropped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one record and flush it to disk (a killed run loses at most the line in flight)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _comparable(prov: dict[str, Any]) -> dict[str, Any]:
    # The URL of a stack the harness started changes between runs; what it runs does not.
    return {k: v for k, v in prov.items() if k != "url" or not prov.get("started")}


def open_run(out: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the run directory's run.json, or check a resumed run is the same run."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / RUN_FILE
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("questions_sha256") != manifest["questions_sha256"]:
            raise BadRequest(f"{out} holds a run on another question file; use a new --out")
        for slot, prov in manifest["setups"].items():
            was = old.get("setups", {}).get(slot)
            if was is not None and _comparable(was) != _comparable(prov):
                raise BadRequest(f"{out} holds answers of a different setup {slot} "
                                 f"({was.get('name')}); use a new --out")
        if old.get("rule") and manifest.get("rule") and old["rule"] != manifest["rule"]:
            raise BadRequest(f"{out} was run with the acceptance rule {old['rule']!r}; a run "
                             "with another rule is refused")
        manifest = {**old, **{k: v for k, v in manifest.items() if v is not None},
                    "setups": {**old.get("setups", {}), **manifest["setups"]}}
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return manifest


def record_from_frames(q: AnswerQuestion, frames: list[dict[str, Any]],
                       elapsed_ms: float) -> dict[str, Any]:
    """What is kept of one turn: answer, sources, checks, usage, timings, index."""
    last = frames[-1] if frames else {"type": "error", "code": 0, "message": "no frames"}
    base: dict[str, Any] = {"id": q.id, "language": q.language, "category": q.category,
                            "answerable": q.answerable, "elapsed_ms": round(elapsed_ms, 1),
                            "turn": next((f.get("turn") for f in frames if f.get("turn")),
                                         None)}
    if last.get("type") != "done":
        return {**base, "outcome": "error", "error": {"code": last.get("code"),
                                                      "message": last.get("message")}}
    return {**base, "outcome": "done", "answer": last.get("answer", ""),
            "sources": last.get("sources", []), "checks": last.get("checks", {}),
            "usage": last.get("usage", {}), "timing": last.get("timing", {}),
            "index": last.get("index"), "detected_language": last.get("language"),
            "structured": last.get("structured"),
            "restarts": sum(1 for f in frames if f.get("type") == "restart")}


# Refusals that say "not now" rather than "this answer failed": stop, resume later.
STOP_CODES = frozenset({401, 403, 429, 503})


def collect(path: Path, questions: Iterable[AnswerQuestion], ask: Ask,
            max_new: int | None = None, progress: Progress | None = None) -> int:
    """Ask every question not yet answered in `path`; returns how many were asked now."""
    done = {r["id"] for r in read_jsonl(path)}
    asked = 0
    for q in questions:
        if q.id in done:
            continue
        if max_new is not None and asked >= max_new:
            break
        started = time.monotonic()
        frames = ask(q.question)
        last = frames[-1] if frames else {}
        if last.get("type") == "error" and last.get("code") in STOP_CODES:
            raise AssistantError(f"the server refused question {q.id} ({last.get('code')}: "
                                 f"{last.get('message')}); run the same command again to "
                                 "resume", public_message=str(last.get("message")))
        record = record_from_frames(q, frames, (time.monotonic() - started) * 1000)
        append_jsonl(path, record)
        asked += 1
        if progress:
            progress(f"{q.id}: {record['outcome']} in {record['elapsed_ms'] / 1000:.1f} s")
    return asked


def _verdict_record(item: str, judge_name: str, role: ModelRole, q: AnswerQuestion,
                    record: dict[str, Any], fact_order: list[int]) -> dict[str, Any]:
    messages = judging.judge_messages(q, record.get("answer", ""), record.get("sources", []),
                                      fact_order)
    started = time.monotonic()
    out: dict[str, Any] = {"item": item, "judge": judge_name, "model": role.model}
    try:
        raw, usage = judging.call_judge(role, messages)
        verdict = judging.parse_verdict(raw, len(q.expected_facts), fact_order)
        out.update(delivered=list(verdict.delivered),
                   unsupported_claims=list(verdict.unsupported_claims), usage=usage)
    except (AssistantError, ValueError) as exc:
        out["error"] = str(exc)
    out["ms"] = round((time.monotonic() - started) * 1000, 1)
    return out


def judge_run(out: Path, questions: dict[str, AnswerQuestion],
              answers: dict[str, dict[str, dict[str, Any]]], first: ModelRole,
              second: ModelRole | None, share: float, seed: int,
              progress: Progress | None = None) -> list[dict[str, Any]]:
    """Blind judging of every answered turn, a sample again by the second judge; resumable.

    Errored verdicts are asked again on a resumed run; good ones never are.
    """
    blind_path = out / BLIND_FILE
    blind = json.loads(blind_path.read_text(encoding="utf-8")) if blind_path.is_file() else {}
    pairs = [(slot, qid) for slot, recs in sorted(answers.items())
             for qid, r in recs.items() if r.get("outcome") == "done"]
    items = judging.blind_items(pairs, seed, blind.get("items"))
    sample = blind.get("second") or judging.second_sample(list(items), share, seed)
    blind = {"items": items, "second": sample}
    blind_path.write_text(json.dumps(blind, indent=2) + "\n", encoding="utf-8")
    path = out / JUDGEMENTS_FILE
    have = {(j["item"], j["judge"]) for j in read_jsonl(path) if "error" not in j}
    jobs: list[tuple[str, str, ModelRole]] = [(i, "first", first)
                                              for i in judging.judge_order(items, seed)]
    if second is not None:
        jobs += [(i, "second", second) for i in sample]
    for item, name, role in jobs:
        if (item, name) in have:
            continue
        ref = items[item]
        q = questions[ref["question"]]
        order = list(range(len(q.expected_facts)))
        if name == "second":
            # The second judge reads the facts in another order: agreement is then not an
            # artefact of position.
            random.Random(f"{seed}-{item}").shuffle(order)
        v = _verdict_record(item, name, role, q, answers[ref["setup"]][ref["question"]], order)
        append_jsonl(path, v)
        if progress:
            progress(f"judge {name} {item}: {'error' if 'error' in v else 'ok'} "
                     f"in {v['ms'] / 1000:.1f} s")
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for j in read_jsonl(path):
        if (j["item"], j["judge"]) not in latest or "error" not in j:
            latest[(j["item"], j["judge"])] = j
    return list(latest.values())
