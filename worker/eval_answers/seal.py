"""Sealed question sets (docs/spec/behaviour.md B-35): the file's hash and the acceptance rule,
recorded before any run."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import BadRequest
from worker.eval_answers.questions import file_sha256

CLAUSE = re.compile(r"^\s*([a-z_]+)\s*(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)\s*$")
SEAL_FILE = "seal.json"


class SealError(BadRequest):
    """A sealed set's rule is missing, malformed or was changed."""


@dataclass(frozen=True)
class Clause:
    """One condition of an acceptance rule: METRIC OP NUMBER on the overall metrics."""

    metric: str
    op: str
    value: float

    def holds(self, metrics: dict[str, Any]) -> bool | None:
        """Whether the clause holds; None when the metric was not measured."""
        v = metrics.get(self.metric)
        if v is None:
            return None
        return {">=": v >= self.value, "<=": v <= self.value,
                ">": v > self.value, "<": v < self.value}[self.op]


def parse_rule(rule: str, known: frozenset[str]) -> list[Clause]:
    """`facts_delivered >= 0.47 and unsupported_claims <= 0.26` as clauses."""
    clauses = []
    for part in re.split(r"\band\b", rule.strip()):
        m = CLAUSE.match(part)
        if not m:
            raise SealError(f"not a rule clause: {part.strip()!r} (write METRIC >= NUMBER, "
                            "joined by 'and')")
        if m.group(1) not in known:
            raise SealError(f"unknown metric {m.group(1)!r}; known: {', '.join(sorted(known))}")
        clauses.append(Clause(m.group(1), m.group(2), float(m.group(3))))
    return clauses


def accepted(rule: str, metrics: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The rule applied to a setup's overall metrics: each clause and the verdict."""
    results = [{"clause": f"{c.metric} {c.op} {c.value:g}", "value": metrics.get(c.metric),
                "holds": c.holds(metrics)} for c in parse_rule(rule, known)]
    return {"rule": rule, "clauses": results,
            "accepted": all(r["holds"] is True for r in results)}


def _ledger_rule(ledger: Path, sha: str) -> str | None:
    if not ledger.is_file():
        return None
    for line in ledger.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("sha256") == sha:
            return str(entry["rule"])
    return None


def seal(questions_file: str | Path, rule: str, out_dir: str | Path, ledger: str | Path,
         known: frozenset[str]) -> dict[str, Any]:
    """Record the file's hash and rule in the run directory and the ledger; a sealed file's
    rule never changes (the same rule again is a no-op)."""
    parse_rule(rule, known)
    rule = " ".join(rule.split())
    sha = file_sha256(questions_file)
    ledger_path = Path(ledger)
    before = _ledger_rule(ledger_path, sha)
    if before is not None and before != rule:
        raise SealError(f"this question file was sealed with the rule {before!r}; a sealed "
                        "set's rule cannot change")
    out = Path(out_dir)
    existing = read_seal(out)
    if existing is not None and (existing["sha256"] != sha or existing["rule"] != rule):
        raise SealError(f"{out / SEAL_FILE} already seals {existing['file']} with the rule "
                        f"{existing['rule']!r}")
    record = {"file": str(questions_file), "sha256": sha, "rule": rule,
              "sealed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if existing is None:
        out.mkdir(parents=True, exist_ok=True)
        (out / SEAL_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    else:
        record = existing
    if before is None:
        ledger_path.parent.mkdir(parents=True, exist_ok=True)
        with ledger_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"sha256": sha, "rule": rule, "file": str(questions_file),
                                "sealed_at": record["sealed_at"]}) + "\n")
    return record


def read_seal(out_dir: str | Path) -> dict[str, Any] | None:
    """The seal recorded in a run directory, if any."""
    path = Path(out_dir) / SEAL_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def rule_for_run(questions_file: str | Path, sealed: bool, out_dir: str | Path,
                 ledger: str | Path, rule: str | None) -> str | None:
    """The acceptance rule a run uses; refuses a sealed set without a recorded rule, and any
    rule other than the recorded one."""
    recorded = read_seal(out_dir)
    sha = file_sha256(questions_file)
    if recorded is not None and recorded["sha256"] != sha:
        raise SealError(f"{Path(out_dir) / SEAL_FILE} seals another file (its hash differs)")
    ledger_rule = _ledger_rule(Path(ledger), sha)
    want = " ".join(rule.split()) if rule else None
    if sealed and recorded is None:
        raise SealError("this is a sealed question set: record its acceptance rule first with "
                        f"`become-assistant eval seal {questions_file} --rule ... --out "
                        f"{out_dir}`")
    for have in (recorded["rule"] if recorded else None, ledger_rule):
        if have is not None and want is not None and want != have:
            raise SealError(f"the acceptance rule was sealed as {have!r}; a run with another "
                            "rule is refused")
    if recorded is not None:
        return str(recorded["rule"])
    return want
