"""A passage cut into quotable spans: sentences, list items, table rows, formula lines and
interface strings, each a verbatim slice of the passage text (the quotes answer form).

Shared: the index build embeds every span once (corpus_jobs/build.py), the quotes form ranks
them at question time with those stored vectors (worker/pipeline/quotes.py)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from shared.passage import Passage

MAX_SPAN_CHARS = 300
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_RULE = re.compile(r"^\s*([-*_]\s*){3,}$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ITEM = re.compile(r"^(\s*(?:[-*+]|\d{1,3}[.)])\s+)(.*\S)\s*$")
# An interface text's line: "key.path: the text" (corpus_jobs/loaders.py writes JSON so).
_JSON_LINE = re.compile(r"^([\w.\-\[\]]+):\s+(.*\S)\s*$")
_LINK_ONLY = re.compile(r"^!?\[[^\]]*\]\([^)]*\)[.,;]?$")
# mkdocs admonitions ("!!! warning") and HTML comments are markup, not text.
_MARKUP_LINE = re.compile(r"^\s*(!!!|\?\?\?|<!--)")
# A bold label with nothing after it ("**Formula:**"): a heading in disguise.
_LABEL_ONLY = re.compile(r"^\*\*[^*]{1,40}\*\*:?$|^[^\s]{1,40}:$")
# Where a sentence may end: . ! ? … then closing marks, then space, then an opening mark,
# a capital, a digit or markup.
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"'”’»)\]]*\s+(?=[\"'„“«(\[*`_]*[A-ZÁČĎÉĚÍŇÓŘŠŤÚŮÝŽ0-9])")
# A legal reference ("čl. 6 odst. 1 písm. b)", "Art. 20") is one too.
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf dr mr mrs ms no fig approx tj např cca tzv atd apod resp příp str čís "
    "viz srov art čl odst písm sb".split())
_WORD = re.compile(r"\w", re.UNICODE)
# A file tree or a drawing, not prose.
_DRAWING = re.compile(r"[│├└┌┐┘┼─═║╔╗╚╝]")
# A file tree's line ("│   ├── test_data_loading.py   # text file parsing"): the entry and
# its comment after the branches say where a thing lives. A piece of a long tree that the
# chunker cut off from its fence still has them.
_TREE_LINE = re.compile(r"^((?:\s*│)*\s*[├└]──+\s*)(\S.*\S)\s*$")
# corpus_jobs/chunker.py starts a later piece of a long section with at most this many
# characters of the previous piece's tail.
MAX_OVERLAP = 60
# Interface keys whose text names a thing rather than saying something of it.
_NAMING_KEYS = frozenset(
    "title heading label button cta placeholder name email term confirm cancel".split())
_NAMING_SUFFIXES = ("Title", "Heading", "Label", "Button", "Placeholder")
# What a finished sentence, or one introducing what follows, ends with.
_ENDS = (".", "!", "?", "…", ":", ";")


@dataclass(frozen=True)
class Span:
    """A verbatim slice text[start:end] of one passage, and what kind of block it came from."""

    start: int
    end: int
    kind: str  # sentence | item | row | code | line | labels
    block: int  # spans of one paragraph, list, table or code block share a block number
    key: str = ""  # an interface text's key path (kind "line")
    label: str = ""  # the bold label just above a list, table or formula ("Formula")

    def text_of(self, passage_text: str) -> str:
        """The span's own characters."""
        return passage_text[self.start:self.end]


def _alnum_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(1 for c in chars if c.isalnum()) / len(chars) if chars else 0.0


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence slices of text[start:end], never split after an abbreviation or an initial."""
    out: list[tuple[int, int]] = []
    begin = start
    for m in _BOUNDARY.finditer(text, start, end):
        before = text[begin:m.start()].rstrip("\"'”’»)]")
        last = before.split()[-1] if before.split() else ""
        word = last.rstrip(".!?…").lower()
        if last.endswith(".") and (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())):
            continue
        out.append((begin, m.start()))
        begin = m.end()
    out.append((begin, end))
    return [(a, b) for a, b in out if text[a:b].strip()]


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _bounded(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """A slice cut to at most MAX_SPAN_CHARS at a clause or word boundary (never inside a
    word), as many pieces as it takes."""
    out = []
    while b - a > MAX_SPAN_CHARS:
        window = text[a:a + MAX_SPAN_CHARS]
        cut = max(window.rfind("; "), window.rfind(", "), window.rfind(": "))
        if cut < MAX_SPAN_CHARS // 2:
            cut = window.rfind(" ")
        if cut <= 0:
            break
        out.append(_trim(text, a, a + cut + 1))
        a = a + cut + 1
    out.append(_trim(text, a, b))
    return [(x, y) for x, y in out if y > x]


def _title_case(text: str) -> bool:
    """A heading or a button label in Title Case ("Delete My Account"): every longer word
    capitalised and no sentence end."""
    words = [w for w in re.findall(r"[^\W\d_]+", text) if len(w) >= 4]
    return (bool(words) and all(w[0].isupper() for w in words)
            and len(text.split()) <= 6 and not text.rstrip().endswith(_ENDS))


def _naming_key(key: str) -> bool:
    """An interface text that names a thing (a title, a heading, a button, a field): the
    JSON counterpart of a Markdown heading ("heading: Who is responsible")."""
    last = key.rsplit(".", 1)[-1]
    return last.lower() in _NAMING_KEYS or any(last.endswith(n) for n in _NAMING_SUFFIXES)


def _quotable(piece: str) -> bool:
    """Worth quoting: some words, not a bare link, label or drawing."""
    stripped = piece.strip()
    # A title or a button label ("Best compromise") names a thing; it says nothing of it.
    if len(stripped.split()) < 3 or len(_WORD.findall(stripped)) < 4 \
            or _LINK_ONLY.match(stripped) or _title_case(stripped):
        return False
    if _LABEL_ONLY.match(stripped) or _DRAWING.search(stripped):
        return False
    return _alnum_share(stripped) >= 0.4


def overlap_prefix(text: str, siblings: list[str]) -> int:
    """How many leading characters of a piece repeat the tail of another piece of its section
    (the chunker's overlap): that fragment is quoted whole in the other piece."""
    for k in range(min(MAX_OVERLAP, len(text) - 1), 4, -1):
        if text[k] in " \n" and any(s != text and s.endswith(text[:k]) for s in siblings):
            return k
    return 0


def continued(text: str, siblings: list[str]) -> bool:
    """Whether another piece of the section starts with this piece's tail (the chunker's
    overlap): this piece was cut there."""
    return any(s != text and overlap_prefix(s, [text]) > 0 for s in siblings)


def split_spans(text: str, skip: int = 0, continued: bool = False,
                interface: bool = False, keys: bool = True) -> list[Span]:
    """Every quotable span of a passage's text, in order, after its first `skip` characters
    (an overlap fragment, see overlap_prefix); a piece that another `continued` loses an
    unfinished last sentence; an `interface` group (an app's texts) with nothing else to
    quote, its labels (see _labels); `keys`: a "key: text" line is an app's text (a JSON
    file's, as the loader writes it), not a page's wrapped line."""
    spans: list[Span] = []
    # Each interface group's title ("maxError" -> "Maximum Error of Estimate"): a line span
    # carries its group's as its label (see _TITLE_KEYS).
    titles: dict[str, str] = {}
    block = 0
    in_fence = False
    para: tuple[int, int] | None = None
    pos = skip
    label = ""

    def flush() -> None:
        nonlocal para, block, label
        if para is None:
            return
        a, b = para
        whole = text[a:b].strip()
        # "**Formula:**" on its own names what follows: the spans below it carry it.
        label = whole.strip("*: ") if _LABEL_ONLY.match(whole) else ""
        for x, y in _sentences(text, a, b):
            for u, v in _bounded(text, x, y):
                spans.append(Span(u, v, "sentence", block))
        para = None
        block += 1

    previous_kind = ""
    for raw in text[skip:].splitlines(keepends=True):
        a, b = pos, pos + len(raw.rstrip("\r\n"))
        pos += len(raw)
        line = text[a:b]
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            block += 1
            previous_kind = ""
            continue
        if not line.strip():
            flush()
            previous_kind = ""
            continue
        key = ""
        # A tree's line whose branches the chunker's overlap took (the first line of a later
        # piece) is still its entry.
        head = text.rfind("\n", 0, a) + 1
        if (m := _TREE_LINE.match(text[head:b])) is not None and head + m.start(2) >= a:
            kind = "code"
            x, y = head + m.start(2), head + m.end(2)
        elif in_fence:
            kind = "code"
            x, y = _trim(text, a, b)
        elif (_HEADING.match(line) or _RULE.match(line) or _TABLE_SEPARATOR.match(line)
              or _MARKUP_LINE.match(line)):
            flush()
            previous_kind = ""
            if _HEADING.match(line):
                label = ""
            continue
        elif line.lstrip().startswith("|"):
            kind = "row"
            x, y = _trim(text, a, b)
        elif (m := _ITEM.match(line)) is not None:
            kind = "item"
            x, y = a + m.start(2), a + m.end(2)
        elif keys and (m := _JSON_LINE.match(line)) is not None and "/" not in m.group(1):
            kind = "line"
            key = m.group(1)
            x, y = a + m.start(2), a + m.end(2)
            if key.rpartition(".")[2] in _TITLE_KEYS:
                titles.setdefault(_parent(key), m.group(2))
        else:
            # Paragraph text; a wrapped line joins the paragraph it continues.
            para = (para[0], b) if para is not None else (a, b)
            previous_kind = "sentence"
            continue
        flush()
        if kind != previous_kind:
            block += 1
        previous_kind = kind
        pieces = _sentences(text, x, y) if kind in ("item", "line") else [(x, y)]
        for u0, v0 in pieces:
            for u, v in _bounded(text, u0, v0):
                spans.append(Span(u, v, kind, block, key, label))
    flush()
    # A piece the next one continues may end inside a sentence or a table row: the next piece
    # quotes it whole. (A list item need not end in a stop, so it is left alone.)
    tail = text.rstrip()
    if continued and spans and spans[-1].end == len(tail) and (
            (spans[-1].kind in ("sentence", "line")
             and not tail.rstrip("\"'”’»)]*_`").endswith(_ENDS))
            or (spans[-1].kind == "row" and not tail.endswith("|"))):
        spans.pop()
    if interface and (group := _labels(text, skip)) is not None:
        return [group]
    return [replace(s, label=titles.get(_parent(s.key), s.label)) if s.kind == "line" else s
            for s in spans if _quotable(s.text_of(text)) and not _naming_key(s.key)]


# The keys whose text names the group of interface texts it heads ("maxError.title"): "A
# quality metric ..." means something only beside its group's "Maximum Error of Estimate", so a
# line span carries its group's title as its label (span_context); a top-level text carries the
# passage's own title (a passage's heading is a key path, "results.bestCompromise").
_TITLE_KEYS = frozenset(("title", "heading", "term", "name"))


def _parent(key: str) -> str:
    """An interface key's group ("maxError" of "maxError.description"; "" at the top)."""
    return key.rpartition(".")[0]


# How a "labels" span is shown: its texts, each verbatim, between these.
LABELS_JOIN = " · "
# A label is at most this many words.
LABEL_WORDS = 4


def _labels(text: str, skip: int) -> Span | None:
    """An interface group with nothing to quote but labels ("Change Password", "Current
    Password", "Update Password"): one span of its lines, shown as their texts (label_text),
    so that the group a question is about can still be quoted. None for any other text."""
    first = end = None
    shown = count = 0
    fragments = titled = False
    pos = skip
    for raw in text[skip:].splitlines(keepends=True):
        a, b = pos, pos + len(raw.rstrip("\r\n"))
        pos += len(raw)
        line = text[a:b]
        if not line.strip():
            continue
        m = _JSON_LINE.match(line)
        # Every line a label (a sentence the chunker cut off at the piece's end is none).
        if m is None or "/" in m.group(1) or not _label(m.group(1), m.group(2)):
            return None
        if _fragment(m.group(2)):
            fragments = True
        else:
            titled = True
        if fragments and titled:
            # A word the app puts after a number ("5 experts") among titled labels: a card's
            # odd texts, not a form or a menu a person reads together.
            return None
        shown += len(m.group(2)) + len(LABELS_JOIN)
        if first is not None and shown > MAX_SPAN_CHARS:
            break
        first = a if first is None else first
        end = a + m.end(2)
        count += 1
    return Span(first, end, "labels", 0) if first is not None and end is not None \
        and count >= 2 else None


def _label(key: str, value: str) -> bool:
    """An interface text that labels a thing: a naming key, a text too short to quote, or a
    few words with no sentence end ("Potvrdit nové heslo": Czech labels are not in Title
    Case)."""
    return _naming_key(key) or not _quotable(value) or (
        len(value.split()) <= LABEL_WORDS and not value.rstrip().endswith(_ENDS))


def _fragment(value: str) -> bool:
    """One lower-case word ("experts", "expertů"): a piece of a text the app puts together,
    or, when every label of a group is one, the names of one kind of thing."""
    return value.isalpha() and value.islower()


def label_values(text: str, span: Span) -> list[str]:
    """A "labels" span's texts without their keys, each verbatim (none for another span)."""
    if span.kind != "labels":
        return []
    return [m.group(2) for line in span.text_of(text).splitlines()
            if (m := _JSON_LINE.match(line.strip())) is not None]


def label_text(text: str, span: Span) -> str:
    """A span as shown: a "labels" span its texts (label_values), any other its own text."""
    return LABELS_JOIN.join(label_values(text, span)) if span.kind == "labels" \
        else span.text_of(text)


def earlier_pieces(text: str, siblings: Sequence[str]) -> tuple[str, int]:
    """The text of a section before this piece (the chunker's pieces chained by their
    overlap, each overlap once) and the length of this piece's own overlap fragment: text[k:]
    follows the returned text in the section."""
    chain = [text]
    while (prev := next((s for s in siblings if s not in chain
                         and overlap_prefix(chain[0], [s]) > 0), None)) is not None:
        chain.insert(0, prev)
    before = chain[0] if len(chain) > 1 else ""
    for i in range(1, len(chain) - 1):
        before += chain[i][overlap_prefix(chain[i], [chain[i - 1]]):]
    return before, overlap_prefix(text, [chain[-2]]) if len(chain) > 1 else 0


def tree_path(text: str, span: Span, siblings: Sequence[str] = ()) -> str:
    """Where a file tree's entry lives: the names of the entries above it in the tree, then its
    own ("tests/integration/api/db/"), as far up as the passage's text, and the pieces of its
    section before it (`siblings`), hold the tree; "" for a span of no tree line, or an entry
    with nothing above it."""
    before, skip = earlier_pieces(text, siblings) if siblings else ("", 0)
    if before:
        span = Span(span.start - skip + len(before), span.end - skip + len(before), span.kind,
                    span.block, span.key, span.label)
        text = before + text[skip:]
    start = text.rfind("\n", 0, span.start) + 1
    end = text.find("\n", span.start)
    m = _TREE_LINE.match(text[start:end if end >= 0 else len(text)])
    if m is None:
        return ""
    names = [m.group(2).split()[0]]
    depth = m.start(2)
    for line in reversed(text[:start].splitlines()):
        if (up := _TREE_LINE.match(line)) is not None:
            if up.start(2) < depth:
                names.append(up.group(2).split()[0])
                depth = up.start(2)
            continue
        word = line.strip().split()
        # The tree's root ("tests/") on the line above its first branch.
        if len(word) == 1 and word[0].endswith("/") and not line[:1].isspace():
            names.append(word[0])
        break
    if len(names) == 1:
        return ""
    return "".join(n if n.endswith("/") else n + "/" for n in reversed(names[1:])) + names[0]


# Interface sections whose texts say what happened after an action ("Member removed",
# "Failed to remove member"): quotable one by one where a text is, never as a group of labels.
_MESSAGE_SECTIONS = frozenset({"toast", "toasts", "error", "errors", "notifications"})


def _messages(section: str) -> bool:
    """An interface section of toasts or error messages."""
    return section.rsplit(".", 1)[-1].lower() in _MESSAGE_SECTIONS


def passage_spans(passages: Sequence[Passage], pool: Sequence[Passage]) -> list[list[Span]]:
    """Each passage's spans, an overlap fragment from the previous piece of its section (a
    sibling in `pool`, the index's passages) left out."""
    wanted = {(p.source, p.section) for p in passages}
    siblings: dict[tuple[str, str], list[str]] = {}
    for p in pool:
        if (p.source, p.section) in wanted:
            siblings.setdefault((p.source, p.section), []).append(p.text)
    out = []
    for p in passages:
        pieces = siblings.get((p.source, p.section), [])
        app_texts = p.source.endswith(".json")
        out.append(split_spans(p.text, overlap_prefix(p.text, pieces), continued(p.text, pieces),
                               interface=app_texts and not _messages(p.section), keys=app_texts))
    return out


def leaf(section: str) -> str:
    """The last heading of a heading path (or key of a key path), without its # marks."""
    return section.split(" > ")[-1].lstrip("#").strip()


def span_context(passage: Passage, span: Span) -> str:
    """What a span means besides its words: its heading, and the label above it."""
    heading = leaf(passage.section)
    return f"{heading}, {span.label}" if span.label else heading


def embed_text(passage: Passage, span: Span) -> str:
    """What is embedded for a span: its heading first ("Step 4: the maximum error: Δmax =
    ..." is what a formula line means), then its own characters."""
    return f"{span_context(passage, span)}: {label_text(passage.text, span)}"


def text_key(text: str) -> str:
    """The embedding cache's key of a text (as a passage's content_hash is of its index text)."""
    return hashlib.sha256(text.encode()).hexdigest()
