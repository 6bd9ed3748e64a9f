"""The checks an answer gets in code, declared once: each check's name, what its block in the
done frame holds, the warning a reader sees and the eval metric it feeds.

The functions that run them are in worker/pipeline/checks.py (`RUNNERS`, one per name here);
the turn, the trace metrics, the CLI, the eval grader, the check bench and docs/protocol.md
iterate `CHECKS`. Every block has `valid` (true, false, or null with `"unavailable": true` when
a bug inside the check kept it from running: neither passed nor failed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Block = Mapping[str, Any]


@dataclass(frozen=True)
class Check:
    """One check: its done-frame name, meaning, block fields, warning and eval metric."""

    name: str
    meaning: str
    # The block's fields besides `valid`, each with one line of meaning (docs/protocol.md).
    fields: Mapping[str, str]
    # The sentence a reader sees when the check flags an answer (the CLI; the panel has its
    # own translated texts, web/static/panel-i18n.js `checks.<name>`).
    warning: Callable[[Block], str]
    # Every turn runs it (else only the answer forms that produce what it checks).
    always: bool = True
    # The answers eval's 1/0 flag for it (worker/eval_answers), None when not graded.
    metric: str | None = None
    metric_meaning: str = ""
    # The flag for a record made before the check existed (None: not counted either way).
    absent: float | None = None


def _items(block: Block, key: str) -> list[Any]:
    value = block.get(key)
    return list(value) if isinstance(value, list | tuple) else []


CHECKS: tuple[Check, ...] = (
    Check("citations", "every [n] points at a passage the model was given",
          {"cited": "the passage numbers the answer cites, in order of first use",
           "invalid": "the cited numbers outside 1..passages"},
          lambda b: f"invalid citations {_items(b, 'invalid')}",
          metric="invalid_citations",
          metric_meaning="answers with a citation that points nowhere", absent=0.0),
    Check("numbers", "every number the answer states is in the passages, the question, the "
          "user's earlier messages or the project data",
          {"unconfirmed": "the numbers found nowhere in that material, as written",
           "checked": "how many numbers were checked"},
          lambda b: "numbers not confirmed by the sources: "
          + ", ".join(map(str, _items(b, "unconfirmed"))),
          metric="number_flags",
          metric_meaning="answers with a number the passages do not confirm", absent=0.0),
    Check("prompt_echo", "the answer does not repeat the prompt's instructions or markup",
          {"markup": "prompt markup found in the answer",
           "instructions": "instruction lines found in the answer"},
          lambda b: "this answer repeats the assistant's own instructions instead of "
          "answering; do not rely on it, try asking in other words",
          metric="prompt_echo",
          metric_meaning="answers repeating the prompt's instructions or markup"),
    Check("repeat", "the answer does not repeat an earlier answer of the conversation",
          {"earlier": "which earlier answer it repeats (null: none)",
           "similarity": "its similarity to that answer"},
          lambda b: "this answer repeats an earlier answer of this conversation; it may not "
          "answer the new question",
          metric="repeat",
          metric_meaning="answers repeating an earlier answer of the conversation"),
    Check("quotes", "every quotation is found in its source (quotes and structured forms)",
          {"not_found": "the quotations not found"},
          lambda b: "quotes not found in their sources: "
          + ", ".join(f"\u201c{q}\u201d" for q in _items(b, "not_found")),
          always=False),
    Check("source_paths", "every source path the answer names exists (quotes and structured "
          "forms)",
          {"invalid": "the paths that do not exist"},
          lambda b: "source paths that do not exist: " + ", ".join(
              map(str, _items(b, "invalid"))),
          always=False),
)
BY_NAME: Mapping[str, Check] = {c.name: c for c in CHECKS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
# Run on every turn: a bug in the checks step marks each of these unavailable.
ALWAYS: tuple[str, ...] = tuple(c.name for c in CHECKS if c.always)
GRADED: tuple[Check, ...] = tuple(c for c in CHECKS if c.metric is not None)
# A check that could not run (a bug inside it): neither passed nor failed.
UNAVAILABLE: Mapping[str, Any] = {"valid": None, "unavailable": True}


def unavailable() -> dict[str, Any]:
    """A fresh block for a check that could not run."""
    return dict(UNAVAILABLE)


def warnings(checks: Mapping[str, Any]) -> list[str]:
    """The sentences a done frame's checks ask the reader to verify, in the registry's order;
    then one per check that could not run."""
    out = [c.warning(block) for c in CHECKS
           if isinstance(block := checks.get(c.name), Mapping) and block.get("valid") is False]
    return out + [f"the {name} check could not run; verify this answer yourself"
                  for name, block in checks.items()
                  if isinstance(block, Mapping) and block.get("unavailable") is True]


def flags(checks: Mapping[str, Any]) -> list[str]:
    """The metric labels of a checks block: each failed check, `<name>_unavailable` for each
    that could not run."""
    blocks = [(name, c) for name, c in checks.items() if isinstance(c, Mapping)]
    return [name for name, c in blocks if c.get("valid") is False] + [
        f"{name}_unavailable" for name, c in blocks if c.get("unavailable") is True]
