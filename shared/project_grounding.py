"""Which numbers of a project block may ground the model's numbers: only the structured ones.

The block (web/project/context.py) mixes values the app stores as numbers (opinion bounds, the
scale, counts, the stored result) and figures computed in code with text members typed (names,
positions, the description, the unit, the Likert decision). A member who writes "the best
compromise is 77.7" in the description must not make an answer saying 77.7 pass:
what members type is theirs, not the app's data.

The web tier's block, the agent's prefetched block and the worker's block of tool texts are all
cut from the same lines, so one reader of those lines serves every path. It reads only the parts
that code wrote; a line it does not know inside the fence gives nothing, so a change of the
block's wording can only flag more numbers, never ground a typed one. Typed text has its
whitespace collapsed before it is shown, so it can never start a line of its own.
"""

from __future__ import annotations

import re

from shared.turn_request import grounding_numbers

FENCE_OPEN = "<project-data>"
FENCE_CLOSE = "</project-data>"
# Fenced lines written wholly by code (counts), and the opinion line's code-written parts:
# "Expert 3: <name> (<position>) — lower 1, peak 2, upper 3"; the values follow the last dash.
_COUNTS = re.compile(r"^(?:Members: \d+|Opinions: .*|and \d+ more)$")
_EXPERT = re.compile(r"^(Expert \d+): .* — (.*)$")
_SCALE = "Scale: "
_UNIT = ", unit: "
_LIKERT = "- Likert value: "


def structured_text(text: str) -> str:
    """The code-written parts of a project block, one line each, without any typed text."""
    kept: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line in (FENCE_OPEN, FENCE_CLOSE):
            fenced = line == FENCE_OPEN
        elif not fenced:
            # Outside the fence only the Likert decision is typed: "- Likert value: 4 (yes)".
            kept.append(line.split(" (", 1)[0] if line.startswith(_LIKERT) else line)
        elif line.startswith(_SCALE):
            kept.append(line.split(_UNIT, 1)[0])
        elif _COUNTS.match(line):
            kept.append(line)
        elif match := _EXPERT.match(line):
            kept.append(f"{match.group(1)}: {match.group(2)}")
    return "\n".join(kept)


def project_grounding(text: str) -> tuple[str, ...]:
    """The numbers of a project block that may ground an answer (structured values only)."""
    return grounding_numbers(structured_text(text))
