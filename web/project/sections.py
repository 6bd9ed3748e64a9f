"""The project context cut into what each project tool returns (docs/spec/behaviour.md B-20 with
B-16..B-18).

The cut is made on the lines of `build_context`'s text, so every section keeps the same
allow-list, cleaning, fence and limits as the workflow's block. User-typed text has its
whitespace collapsed there, so it can never start a line of its own and forge an opinion line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from web.project.cleaning import LIMIT_PROJECT_NAME, clean_text
from web.project.context import FENCE_CLOSE, FENCE_OPEN, PREFACE, build_context

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OPINION_LINE = re.compile(r"^(Expert \d+: |and \d+ more$)")
# Figures computed per opinion belong with the opinions: hybrid gives those only through tools.
_OPINION_FIGURE = re.compile(r"^- (Distance of each listed expert|Spread of peaks)")
MAX_LIST = 50


@dataclass(frozen=True)
class ProjectSections:
    """The full workflow block and its three tool sections (each fenced where it holds text)."""

    full: str
    project: str
    result: str
    opinions: str


def split_context(text: str) -> ProjectSections:
    """Cut a `build_context` text into project summary, result and opinions."""
    lines = text.split("\n")
    try:
        start, end = lines.index(FENCE_OPEN), lines.index(FENCE_CLOSE)
    except ValueError:
        return ProjectSections(text, text, "", "")
    fenced = lines[start + 1:end]
    opinion_lines = [line for line in fenced if _OPINION_LINE.match(line)]
    summary = [line for line in fenced if not _OPINION_LINE.match(line)]
    headline = [line for line in fenced if line.startswith(("Project name: ", "Opinions: "))]
    figures = [line for line in lines[end + 1:] if not _OPINION_FIGURE.match(line)]
    per_opinion = [line for line in lines[end + 1:] if _OPINION_FIGURE.match(line)]
    if figures and figures[-1] == "Computed in code from the data above:":
        figures.pop()
    return ProjectSections(
        full=text,
        project="\n".join([PREFACE, FENCE_OPEN, *summary, FENCE_CLOSE]),
        result="\n".join(figures),
        opinions="\n".join([PREFACE, FENCE_OPEN, *headline, *opinion_lines, FENCE_CLOSE,
                            *(["Computed in code from the opinions above:", *per_opinion]
                              if per_opinion else [])]))


def sections(project: Mapping[str, Any], opinions: Sequence[Mapping[str, Any]],
             result: Mapping[str, Any] | None,
             members: Sequence[Mapping[str, Any]] = ()) -> ProjectSections:
    """The sections of one project from the app's JSON."""
    return split_context(build_context(project, opinions, result, members).text)


def project_list(projects: Sequence[Any]) -> list[dict[str, str]]:
    """The user's projects as (id, cleaned name), at most MAX_LIST of them."""
    out = []
    for p in projects[:MAX_LIST]:
        # Ids are the app's own (UUIDs); anything else could carry text into the prompt.
        pid = p.get("id") if isinstance(p, Mapping) else None
        if isinstance(pid, str | int) and not isinstance(pid, bool) and _SAFE_ID.match(str(pid)):
            out.append({"id": str(pid),
                        "name": clean_text(p.get("name"), LIMIT_PROJECT_NAME)})
    return out


def list_text(projects: Sequence[Mapping[str, str]]) -> str:
    """The fenced text `list_my_projects` returns."""
    if not projects:
        return "You have no projects in the BeCoMe app that can be read in this turn."
    lines = [f"- id {p['id']}: {p['name'] or '(no name)'}" for p in projects]
    return "\n".join([PREFACE, FENCE_OPEN, "Your projects:", *lines, FENCE_CLOSE])
