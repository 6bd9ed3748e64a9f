"""How `ask` prints an answer: the streamed text on a terminal, the quotes form from its block."""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap
import unicodedata
from typing import Any, TextIO

from shared.language import quote_marks

INDENT = "    "

# What `ask` prints around an answer, in the question's language (as the panel words it:
# web/static/panel-i18n.js); any other language reads English.
LABELS = {
    "en": {"lead": "Here is what the documentation says, in its own words:",
           "nearest": "The nearest sections of the documentation (ask about one):",
           "not_found": "(not found in the source)", "sources": "Sources:",
           "weak": "(weak match)", "rerank_2": "(answers the question)",
           "rerank_1": "(related)"},
    "cs": {"lead": "Dokumentace to říká vlastními slovy:",
           "nearest": "Nejbližší oddíly dokumentace (zeptejte se na některý):",
           "not_found": "(ve zdroji nenalezeno)", "sources": "Zdroje:",
           "weak": "(slabá shoda)", "rerank_2": "(odpovídá na otázku)",
           "rerank_1": "(souvisí)"},
}


def labels(done: dict[str, Any]) -> dict[str, str]:
    """The labels for the done frame's language."""
    return LABELS.get(str(done.get("language") or "en"), LABELS["en"])


def plain_heading(text: str) -> str:
    """A heading path as plain text: no heading marks, backticks, emphasis or link syntax."""
    parts = []
    for part in str(text or "").split(" > "):
        part = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", part.strip().lstrip("#"))
        part = plain_inline(part)
        if part.strip():
            parts.append(" ".join(part.split()))
    return " > ".join(parts)


def plain_inline(text: str) -> str:
    """Markdown emphasis and backticks dropped; the words stay as written (snake_case too)."""
    text = re.sub(r"(\*\*|\*)(\S(?:.*?\S)?)\1", r"\2", str(text).replace("`", ""))
    return re.sub(r"(?<![\w\\])(__|_)(\S(?:.*?\S)?)\1(?!\w)", r"\2", text)


BOLD, NOT_BOLD = "\033[1m", "\033[22m"
_BOLD_PAIR = re.compile(r"\*\*(?=\S)([^\n]*?\S)\*\*")


def plain_bold(text: str) -> str:
    """`**bold**` pairs without their marks (for output that is not a terminal)."""
    return _BOLD_PAIR.sub(r"\1", text)


class Emphasis:
    """`**bold**` in a streamed answer for a terminal: a mark that opens (before a non-space) or
    closes (after one) becomes the bold escape; other asterisks stay as written."""

    def __init__(self) -> None:
        self.bold = False
        self.pending = ""  # a "*" or "**" at the end of a token: its meaning comes next
        self.last = "\n"  # the last character written

    def feed(self, text: str) -> tuple[str, str]:
        """(what to write, the same without escapes) for one more token."""
        text, self.pending = self.pending + text, ""
        out: list[str] = []
        shown: list[str] = []
        i = 0
        while i < len(text):
            if text.startswith("**", i):
                after = text[i + 2:i + 3]
                if not self.bold and not after:
                    self.pending = text[i:]
                    break
                if not self.bold and not after.isspace() and after != "*":
                    self.bold = True
                    out.append(BOLD)
                    i += 2
                    continue
                if self.bold and not self.last.isspace():
                    self.bold = False
                    out.append(NOT_BOLD)
                    i += 2
                    continue
            elif text[i] == "*" and i == len(text) - 1:
                self.pending = "*"
                break
            out.append(text[i])
            shown.append(text[i])
            self.last = text[i]
            i += 1
        return "".join(out), "".join(shown)

    def end(self) -> str:
        """What is left to write when the answer ends (a held mark, bold switched off)."""
        rest, self.pending = self.pending, ""
        if self.bold:
            self.bold = False
            return rest + NOT_BOLD
        return rest


def is_quotes(done: dict[str, Any]) -> bool:
    """A done frame of the quotes form whose structured block can be printed as such."""
    s = done.get("structured")
    return (done.get("answer_form") == "quotes" and isinstance(s, dict)
            and s.get("valid_json") is not False and s.get("outcome") in ("answer", "dont_know"))


def _where(done: dict[str, Any], n: Any, path: str) -> tuple[str, str | None]:
    """"Title › Section" of source n (else of the quote's own path) and its https link."""
    src = next((s for s in done.get("sources") or [] if isinstance(s, dict) and s.get("n") == n),
               None)
    parts = plain_heading((src or {}).get("section") or path).split(" > ")
    title = plain_heading((src or {}).get("title", "")) or parts[0]
    if parts and parts[0] == title:
        parts = parts[1:]
    url = (src or {}).get("url")
    return " › ".join([title, *[p for p in parts if p]]), \
        url if isinstance(url, str) and url.startswith("https://") else None


def _wrap(text: str, width: int, indent: str) -> list[str]:
    lines: list[str] = []
    for para in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(para, width=width, initial_indent=indent,
                                   subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False) or [indent.rstrip()])
    return lines


def _lines(done: dict[str, Any]) -> list[str]:
    s = done["structured"]
    project = s.get("project") if isinstance(s.get("project"), dict) else {}
    return [str(x) for x in project.get("lines") or [] if isinstance(x, str) and x.strip()]


def format_quotes(done: dict[str, Any], width: int = 100) -> str:
    """The quotes form as text: project figures, lead-in, each quote indented with its source
    ([n] title › section, the link, the note), or "I don't know" with the nearest sections."""
    s = done["structured"]
    width = max(40, width)
    words = labels(done)
    out: list[str] = []
    figures = _lines(done)
    if figures:
        out.append("\n".join(figures))
    if s.get("outcome") == "dont_know":
        said = str(done.get("answer") or "")
        for line in figures:
            said = said.replace(line, "")
        question = str(s.get("clarifying_question") or "").strip()
        if question and question in said:
            said = said.replace(question, "")
        out.extend(p for p in (said.strip(), question) if p)
        nearest = [x for x in s.get("nearest") or [] if isinstance(x, dict) and x.get("ask")]
        if nearest:
            block = [words["nearest"]]
            for x in nearest:
                title = plain_heading(str(x.get("title") or ""))
                section = plain_heading(str(x.get("section") or ""))
                if section.startswith(title + " > "):
                    section = section[len(title) + 3:]
                parts = [title] + ([section] if section and section != title else [])
                where = " › ".join(p.replace(" > ", " › ") for p in parts if p)
                n = x.get("n")
                block.append(f"  [{n}] {where}" if isinstance(n, int) else f"  {where}")
                block.append(f"{INDENT}  become-assistant ask {shlex.quote(str(x['ask']))}")
            out.append("\n".join(block))
        return "\n\n".join(out)
    quotes = [q for q in s.get("quotes") or []
              if isinstance(q, dict) and str(q.get("text") or "").strip()]
    if quotes:  # a project answer may have its figures and no quote
        out.append(str(s.get("lead_in") or "").strip() or words["lead"])
    # Sources off (ASSISTANT_SHOW_SOURCES): no source list, so no quote names one either.
    attributed = bool(done.get("sources"))
    # The marks of the answer's wording, as the worker streams it.
    opening, closing = quote_marks(str(done.get("language") or "en"))
    for q in quotes:
        # A line of a code block is printed as written (its `__init__.py` is no emphasis).
        said = str(q["text"]).strip() if q.get("code") is True \
            else plain_inline(str(q["text"]).strip())
        block = _wrap(f"{opening}{said}{closing}", width, INDENT)
        # A file tree's entry: where it lives in the tree, under it.
        if isinstance(q.get("path"), str) and q["path"].strip():
            block.extend(_wrap(f"({q['path'].strip()})", width, INDENT))
        if attributed:
            where, url = _where(done, q.get("n"), str(q.get("section") or ""))
            # An interface text's group ("Results › Maximum Error of Estimate").
            if isinstance(q.get("group"), str) and q["group"].strip():
                where += f" › {plain_heading(q['group'].strip())}"
            missing = "" if q.get("found", True) else f"  {words['not_found']}"
            block.extend(textwrap.wrap(f"[{q.get('n')}] {where}{missing}", width=width,
                                       initial_indent=INDENT, subsequent_indent=INDENT * 2,
                                       break_long_words=False, break_on_hyphens=False))
            if url:
                block.append(f"{INDENT}{url}")
        if isinstance(q.get("note"), str) and q["note"].strip():
            block.extend(_wrap(f"({q['note'].strip()})", width, INDENT))
        out.append("\n".join(block))
    return "\n\n".join(out)


def format_sources(done: dict[str, Any]) -> list[str]:
    """The source list under an answer: "Sources:", then [n] title > section (a weak match
    and the optional rerank's verdict said so) and its link; nothing without sources."""
    if not done.get("sources"):
        return []
    words = labels(done)
    out = [words["sources"]]
    for s in done["sources"]:
        section = plain_heading(s.get("section", ""))
        title = plain_heading(s.get("title", ""))
        if section.startswith(title + " > "):
            section = section[len(title) + 3:]
        where = s.get("url") or s.get("source") or ""
        out.append(f"  [{s['n']}] {title}" + (f" > {section}" if section and section != title
                                               else "")
                   + (f" {words['weak']}" if s.get("weak") else "")
                   # The optional rerank's verdict (docs/spec/behaviour.md B-15), on its own scale.
                   + (" " + words["rerank_" + str(s["rerank"])]
                      if s.get("rerank") in (1, 2) else "")
                   + (f"\n      {where}" if where else ""))
    return out


def _cells(text: str) -> int:
    """Terminal cells of one line: wide characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def rows(text: str, columns: int) -> int:
    """How many terminal rows the text took when written from the start of a row."""
    return sum(max(1, -(-_cells(line) // columns)) for line in text.split("\n"))


class AnswerPrinter:
    """Prints the answer: tokens as they stream to a terminal, the whole answer at the end
    otherwise; a quotes answer is then shown from its structured block (on a terminal the
    streamed text is replaced when it still fits the screen)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.streamed = ""  # as a person sees it (bold marks turned into escapes, not counted)
        self.emphasis = Emphasis()

    def token(self, text: str) -> None:
        """One streamed token (on a terminal, `**bold**` is shown bold)."""
        if self.tty:
            written, shown = self.emphasis.feed(text)
            self.streamed += shown
            self.out.write(written)
            self.out.flush()
        else:
            self.streamed += text

    def _erase(self) -> bool:
        """Take the streamed text off the terminal; False when it no longer fits the screen."""
        size = shutil.get_terminal_size((100, 40))
        used = rows(self.streamed, size.columns)
        if used >= size.lines:
            return False
        self.out.write("\r" + (f"\033[{used - 1}A" if used > 1 else "") + "\033[J")
        return True

    def restart(self) -> None:
        """The turn starts over (its worker was lost): the text streamed so far goes."""
        if self.tty:
            self.out.write(self.emphasis.end())
        if self.tty and self.streamed and not self._erase():
            self.out.write("\n\n")
        self.streamed = ""
        self.emphasis = Emphasis()

    def done(self, done: dict[str, Any]) -> None:
        """The done frame: the answer as it stands."""
        if self.tty:
            self.out.write(self.emphasis.end())
        if not is_quotes(done):
            if not self.tty:
                self.out.write(plain_bold(str(done.get("answer", self.streamed))))
            self.out.write("\n")
            return
        text = format_quotes(done, width=min(shutil.get_terminal_size((100, 40)).columns, 100) - 1)
        if self.tty and self.streamed and not self._erase():
            self.out.write("\n\n")  # scrolled off: the quotes follow the streamed text
        self.out.write(text + "\n")
        self.out.flush()

    def failed(self) -> None:
        """The turn ended without a done frame: what streamed stays as it is."""
        if self.tty:
            self.out.write(self.emphasis.end())
        if not self.tty and self.streamed:
            self.out.write(plain_bold(self.streamed))
        if self.streamed:
            self.out.write("\n")
        self.out.flush()
