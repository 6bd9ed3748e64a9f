"""The quotes form's answer, written in code in the question's language: a fixed lead-in, the
chosen spans verbatim with their [n], or "I don't know" with one clarifying question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.language import QUOTE_MARKS
from shared.passage import Passage
from shared.spans import Span, label_values, leaf, tree_path
from shared.spans import passage_spans as spans_of
from worker.pipeline.bm25 import LexicalIndex
from worker.pipeline.quotes import Candidate
from worker.pipeline.source_links import is_locale, locale_heading, locale_title, one_per_section
from worker.pipeline.structured import fold
from worker.pipeline.twins import in_language

WORDING: dict[str, dict[str, str]] = {
    "en": {
        "lead_in": "Here is what the documentation says, in its own words:",
        "lead_in_hedged": "The documentation may not answer this exactly; the closest it "
                          "says, in its own words:",
        "dont_know": "I don't know: the documentation I can search does not answer this.",
        "unknown_one": "It never uses the word {names}.",
        "unknown_many": "It never uses the words {names}.",
        "clarify": "Did you mean {options}?",
        "clarify_none": "Could you say which part of BeCoMe or its app you are asking about?",
        "or": "or",
        "and": "and",
        "ask": "What does the documentation say about “{section}”?",
        "english": "The documentation says this in English.",
        "czech": "The documentation says this in Czech.",
        **dict(zip(("open", "close", "inner_open", "inner_close"), QUOTE_MARKS["en"],
                   strict=True)),
    },
    "cs": {
        "lead_in": "Dokumentace o tom doslova říká:",
        "lead_in_hedged": "Dokumentace na to možná přesně neodpovídá; nejblíže tomu doslova "
                          "říká:",
        "dont_know": "To nevím: dokumentace, kterou mohu prohledat, na to neodpovídá.",
        "unknown_one": "Slovo {names} v ní nikde není.",
        "unknown_many": "Slova {names} v ní nikde nejsou.",
        "clarify": "Myslíte {options}?",
        "clarify_none": "Můžete upřesnit, na kterou část metody BeCoMe nebo aplikace se ptáte?",
        "or": "nebo",
        "and": "a",
        "ask": "Co říká dokumentace o části „{section}“?",
        "english": "Dokumentace to uvádí anglicky.",
        **dict(zip(("open", "close", "inner_open", "inner_close"), QUOTE_MARKS["cs"],
                   strict=True)),
    },
}
MAX_NEAREST = 3


def wording(lang: str) -> dict[str, str]:
    """The form's sentences in the question's language (English when it is neither)."""
    return WORDING.get(lang, WORDING["en"])


def passage_spans(passages: Sequence[Passage], lexical: LexicalIndex) -> list[list[Span]]:
    """Each passage's spans, an overlap fragment from the previous piece left out."""
    return spans_of(passages, lexical.passages)


@dataclass(frozen=True)
class QuotesAnswer:
    """What the form says: its text (as streamed) and the done frame's structured block."""

    text: str
    outcome: str
    passages: tuple[Passage, ...]  # the quoted passages, numbered [1].. in this order
    quotes: tuple[dict[str, Any], ...]
    clarifying_question: str | None = None
    nearest: tuple[dict[str, Any], ...] = ()
    lead: tuple[str, ...] = field(default=())
    # The names of the sections an "I don't know" offers, as written: the index's own
    # headings and texts, so they ground the numbers they hold (run_checks' `named`).
    named: tuple[str, ...] = ()
    # The lead-in before the quotes, and whether it says they may not answer exactly (the
    # quotes barely answer: quotes.hedged).
    lead_in: str = ""
    hedged: bool = False

    def structured(self) -> dict[str, Any]:
        """The block the structured form's done frame carries, plus the form's own fields."""
        return {"valid_json": True, "cut": False, "outcome": self.outcome,
                "lead_in": self.lead_in if self.outcome == "answer" else None,
                "hedged": self.hedged,
                "clarifying_question": self.clarifying_question,
                "quotes": list(self.quotes),
                "sources": [{"path": p.source, "valid": True}
                            for p in dict.fromkeys(self.passages)],
                "nearest": list(self.nearest)}


def heading(p: Passage) -> str:
    """A passage's last heading, or a locale key's text (never its key path)."""
    return locale_heading(p.section, p.text, None, p.lang) if is_locale(p.source) \
        else leaf(p.section)


def title(p: Passage, reader: str = "en") -> str:
    """A passage's document title (a locale file's says what the file holds, in the reader's
    language)."""
    return locale_title(p.title, p.source, p.lang, reader) if is_locale(p.source) else p.title


def group(span: Span, p: Passage) -> str:
    """The title of the interface group a quoted text belongs to ("" for any other span, or a
    text of the section's own group)."""
    return span.label if span.kind == "line" and span.label and span.label != heading(p) \
        else ""


def _name(p: Passage, reader: str) -> str:
    """A section as a person can tell it apart: "A worked example › Contents"."""
    section = heading(p)
    name = title(p, reader)
    return section if not name or name == section else f"{name} › {section}"


def _inner(name: str, w: dict[str, str]) -> str:
    """A name's own quotation marks (a locale group named by its first texts, in English or
    Czech marks) as the language's inner ones, so that quoting the name does not nest the
    outer marks: “Doc › ‘Stop’”, „Doc › ‚Stop‘“."""
    out, open_ = [], False
    for ch in name:
        if ch in "„“”":
            # „ opens and ” closes; “ opens in English marks and closes in Czech ones.
            open_ = ch == "„" or (ch == "“" and not open_)
            ch = w["inner_open"] if open_ else w["inner_close"]
        out.append(ch)
    return "".join(out)


def _ask(w: dict[str, str], section: str) -> str:
    """The question that asks about a section; a name already in quotation marks (a locale
    group's first texts) is not quoted twice."""
    template = w["ask"]
    if section.startswith(("“", "„")):
        template = template.replace(f"{w['open']}{{section}}{w['close']}", "{section}")
    return template.format(section=section)


def _options(names: Sequence[str], w: dict[str, str], joiner: str = "or") -> str:
    quoted = [f"{w['open']}{_inner(n, w)}{w['close']}" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + f" {w[joiner]} " + quoted[-1]


def compose(chosen: Sequence[Candidate], passages: Sequence[Passage], lang: str,
            lead: Sequence[str] = (), strange: Sequence[str] = (),
            pool: Sequence[Passage] = (), hedged: bool = False) -> QuotesAnswer:
    """The answer from the chosen spans; "I don't know" when there are none.

    `lead`: paragraphs written in code before the quotes (a project's key figures);
    `strange`: the question's names the corpus never uses, which "I don't know" says;
    `pool`: the index's passages (a file tree's entry is placed in the whole tree of its
    section, see tree_path); `hedged`: the quotes barely answer (quotes.hedged)."""
    w = wording(lang)
    if not chosen:
        # An English reader is offered the English FAQ, not its Czech twin (and the reverse).
        passages = in_language(passages, lang, pool)
        names = list(dict.fromkeys(_name(p, lang) for p in passages if leaf(p.section)))
        names = names[:MAX_NEAREST]
        question = w["clarify"].format(options=_options(names, w)) if names \
            else w["clarify_none"]
        nearest = tuple({"title": title(p, lang),
                         "section": heading(p) if is_locale(p.source) else p.section,
                         "source": p.source, "ask": _ask(w, heading(p))}
                        for p in _distinct_sections(passages)[:MAX_NEAREST])
        unused = (" " + w["unknown_many" if len(strange) > 1 else "unknown_one"].format(
            names=_options(strange, w, "and")) if strange else "")
        body = [*lead] if lead else [w["dont_know"] + unused, question]
        named = tuple(dict.fromkeys([*names, *(n[k] for n in nearest
                                               for k in ("title", "section")), *strange]))
        return QuotesAnswer("\n\n".join(body), "answer" if lead else "dont_know", (), (),
                            None if lead else question, () if lead else nearest, tuple(lead),
                            () if lead else named, lead_in=w["lead_in"])
    quoted: list[Passage] = []
    sections: list[tuple[str, str]] = []  # numbered once each: [n] names a section
    quotes: list[dict[str, Any]] = []
    lead_in = w["lead_in_hedged" if hedged else "lead_in"]
    lines: list[str] = [*lead, lead_in]
    # A quote in the other language than the question's says so (once more at the end).
    other = "english" if lang == "cs" else "czech"
    other_note = False
    for c in chosen:
        p = passages[c.n]
        if p not in quoted:
            quoted.append(p)
        if (p.source, p.section) not in sections:
            sections.append((p.source, p.section))
        n = sections.index((p.source, p.section)) + 1
        note = w[other] if (lang == "cs") != (p.lang == "cs") else None
        other_note = other_note or note is not None
        # A line of a code block (a file tree's entry, a formula, a command) is shown as
        # code, never as Markdown; a tree's entry with where it lives in the tree.
        code = c.span.kind == "code"
        quotes.append({"n": n, "text": c.text, "found": True, "source": p.source,
                       "section": p.section, "language": p.lang, "note": note,
                       "code": code, "path": tree_path(p.text, c.span, [
                           o.text for o in pool if (o.source, o.section) == (p.source, p.section)
                       ]) if code else "",
                       # An interface group's labels, each verbatim (shared.spans.label_text).
                       "labels": label_values(p.text, c.span),
                       # An interface text's group title, where it is not the section's own
                       # ("Maximum Error of Estimate" under "Results"): what the text is about.
                       "group": group(c.span, p)})
        lines.append(f"{w['open']}{c.text}{w['close']} [{n}]")
    if other_note:
        lines.append(f"({w[other]})")
    # The quoted pieces of one section are one source: joined in reading order, so each quote
    # is still found in the text its [n] points at.
    return QuotesAnswer("\n\n".join(lines), "answer", one_per_section(quoted), tuple(quotes),
                        lead=tuple(lead), lead_in=lead_in, hedged=hedged)


def found(quote: dict[str, Any], passage_text: str) -> bool:
    """Whether a quote is in a passage's text, verbatim but for spacing and case; a group of
    labels each of its labels."""
    parts = quote.get("labels") or [quote.get("text")]
    folded = fold(passage_text)
    return all(isinstance(p, str) and p.strip() and fold(p) in folded for p in parts)


def _distinct_sections(passages: Sequence[Passage]) -> list[Passage]:
    seen: set[tuple[str, str]] = set()
    out = []
    for p in passages:
        if (p.source, p.section) not in seen:
            seen.add((p.source, p.section))
            out.append(p)
    return out
