"""Reading the app's JSON safely (docs/spec/behaviour.md B-18): user-typed text cleaned for the
fence (no markup, controls, ids or e-mails; shortened to its field's limit), finite numbers and
triangles, and who opted out of other members' assistants."""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from shared.method import Fuzzy

LIMIT_PROJECT_NAME = 120
LIMIT_DESCRIPTION = 600
LIMIT_PERSON_NAME = 80
LIMIT_POSITION = 80
LIMIT_UNIT = 20
LIMIT_LIKERT_DECISION = 40
ELLIPSIS = "…"
# Script and style bodies are code, not text someone meant to show. The opener's attributes are
# bounded and its closer is searched for separately (see _drop_code): one regex with ".*?" up to
# a back-reference scans to the end of the text from every unclosed opener, which is quadratic.
_CODE_OPEN = re.compile(r"<\s*(script|style)\b[^<>]{0,400}>", re.IGNORECASE)
_CODE_CLOSE = {name: re.compile(rf"<\s*/\s*{name}\s*>", re.IGNORECASE)
               for name in ("script", "style")}
# Every field is cut to this many times its limit before any pattern runs: cleaning only removes or
# folds characters, so what survives fits, and the work per field stays bounded
# (docs/spec/behaviour.md B-18).
_RAW_FACTOR = 8
# Tag-like markup: "<", optional "/", then a letter, "!" or "?" (so "a < b > c" survives);
# spaced near misses such as "< /project-data >" are defused by the bracket and word rules.
_TAG = re.compile(r"</?[A-Za-z!?][^<>]*>")
# The fence's own word in any spelling; a model may honour a near miss like "< /project data >".
_FENCE_WORD = re.compile(r"project[\s_\-\u2010-\u2015]*data", re.IGNORECASE)
# Starts only where a run of address characters starts, and never gives characters back: tried
# from every position of "aaaa…@" it would rescan the run each time (quadratic).
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]++(?:\.[\w-]++)+")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
                   re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


def _strip_controls(text: str) -> str:
    """Whitespace controls become spaces; other control/format/unassigned characters go."""
    kept = []
    for ch in text:
        if ch.isspace():
            kept.append(" ")
        elif not unicodedata.category(ch).startswith("C"):
            kept.append(ch)
    return "".join(kept)


def _drop_code(text: str) -> str:
    """Replace each closed script or style element by a space, in one pass over the text."""
    parts: list[str] = []
    pos = 0
    exhausted: set[str] = set()  # names with no closer after the current position
    while (opener := _CODE_OPEN.search(text, pos)) is not None:
        name = opener.group(1).lower()
        closer = None if name in exhausted else _CODE_CLOSE[name].search(text, opener.end())
        if closer is None:
            # Left for the tag rule; no later opener of this name can find a closer either.
            exhausted.add(name)
            parts.append(text[pos:opener.end()])
        else:
            parts.append(text[pos:opener.start()] + " ")
        pos = opener.end() if closer is None else closer.end()
    parts.append(text[pos:])
    return "".join(parts)


def _strip_markup(text: str) -> str:
    """Remove tags until none is left, then defuse any stray angle bracket."""
    # Repeat because removing "<b>" from "<<b>/project-data>" forms a new tag.
    for _ in range(20):
        stripped = _TAG.sub("", _drop_code(text))
        if stripped == text:
            break
        text = stripped
    return text.replace("<", "‹").replace(">", "›")


def clean_text(value: object, limit: int) -> str:
    """User-typed text made safe for the fence: no markup, controls, ids or e-mails; shortened."""
    if value is None:
        return ""
    # Cut first (and again after each step that can lengthen the text), so no pattern ever
    # sees more than a few KB however much a member stored.
    cap = limit * _RAW_FACTOR
    # NFKC folds look-alikes such as fullwidth "＜" into "<"; entities are decoded so that
    # "&lt;/project-data&gt;" is caught as markup; NFKC again for what the entities produced.
    text = unicodedata.normalize("NFKC", str(value)[:cap])[:cap]
    text = unicodedata.normalize("NFKC", html.unescape(text))[:cap]
    text = _strip_markup(_strip_controls(text))
    text = _FENCE_WORD.sub("project data", text)
    text = _EMAIL.sub("(e-mail removed)", text)
    text = _UUID.sub("(id removed)", text)
    text = _WHITESPACE.sub(" ", text.replace("`", "")).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + ELLIPSIS
    return text


def number(value: object) -> float | None:
    """A finite JSON number as float, else None (JSON booleans are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    as_float = float(value)
    return as_float if math.isfinite(as_float) else None


def fuzzy(lower: object, peak: object, upper: object) -> Fuzzy | None:
    """A triangle from three JSON values, or None when any is not a number."""
    values = (number(lower), number(peak), number(upper))
    if values[0] is None or values[1] is None or values[2] is None:
        return None
    return Fuzzy(values[0], values[1], values[2])


def opinion_values(opinion: Mapping[str, Any]) -> Fuzzy | None:
    """An opinion's (lower_bound, peak, upper_bound)."""
    return fuzzy(opinion.get("lower_bound"), opinion.get("peak"), opinion.get("upper_bound"))


def stored_triangle(result: Mapping[str, Any], name: str) -> Fuzzy | None:
    """One {lower, peak, upper} object of the stored result."""
    tri = result.get(name)
    if not isinstance(tri, Mapping):
        return None
    return fuzzy(tri.get("lower"), tri.get("peak"), tri.get("upper"))


def hidden_user_ids(members: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """Members who opted out of other members' assistants (missing flag: not opted out)."""
    # Any truthy flag counts: when the app sends something unexpected, hiding is the safe error.
    return frozenset(str(m.get("user_id")) for m in members
                     if m.get("hidden_from_assistants") and m.get("user_id") is not None)


def person_name(opinion: Mapping[str, Any]) -> str:
    """'First Last' as the app shows it, cleaned; a neutral label when empty."""
    first = opinion.get("user_first_name") or ""
    last = opinion.get("user_last_name") or ""
    name = clean_text(f"{first} {last}", LIMIT_PERSON_NAME)
    return name or "(no name given)"
