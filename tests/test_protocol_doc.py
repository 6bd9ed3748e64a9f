"""docs/protocol.md is the frame catalogue's own rendering; the builders, the panel's frame
switch and the checks registry agree with the catalogue."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from shared import checks, frame_types, protocol_doc
from shared.errors import RateLimited, TimedOut
from worker.pipeline.checks import RUNNERS

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "web" / "static"


def test_the_committed_document_is_the_catalogues_rendering() -> None:
    committed = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert committed == protocol_doc.render(), "run: python -m shared.protocol_doc"
    assert protocol_doc.main(["--check"]) == 0


def test_a_catalogue_change_changes_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a frame type added to the catalogue is a row the old file lacks."""
    extra = frame_types.FrameType("progress", "worker", True, False, "a new frame", {})
    monkeypatch.setattr(protocol_doc, "CATALOGUE", (*frame_types.CATALOGUE, extra))
    assert "| `progress` |" in protocol_doc.render()
    assert protocol_doc.main(["--check"]) == 1


def test_every_frame_done_field_and_check_is_in_the_document() -> None:
    text = protocol_doc.render()
    for t in frame_types.CATALOGUE:
        assert f"| `{t.name}` |" in text, t.name
    for f in frame_types.DONE_FIELDS:
        assert f"| `{f.name}` |" in text and f.metadata["meaning"], f.name
    for c in checks.CHECKS:
        assert f"| `{c.name}` |" in text, c.name


def test_the_readme_links_the_protocol_instead_of_holding_it() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/protocol.md" in readme
    assert "Delivery semantics of a turn" not in readme
    assert "Delivery semantics of a turn" in protocol_doc.render()


def _switch_cases(js: str) -> set[str]:
    """The `case "x":` labels of the panel's `switch (f.type)` block."""
    start = js.index("switch (f.type) {")
    depth, end = 0, start
    for end in range(js.index("{", start), len(js)):
        depth += {"{": 1, "}": -1}.get(js[end], 0)
        if depth == 0:
            break
    return set(re.findall(r'case "([a-z_]+)":', js[start:end]))


def test_the_panels_frame_switch_names_exactly_the_logged_types() -> None:
    cases = _switch_cases((STATIC / "panel-turn.js").read_text(encoding="utf-8"))
    assert cases == frame_types.LOGGED


def test_the_panel_names_every_frame_type_it_may_receive_and_no_other() -> None:
    """The transport frames (ping, pong, reconnect) are handled apart from the switch."""
    named = set()
    for path in STATIC.glob("panel*.js"):
        named |= set(re.findall(r'f\.type === "([a-z_]+)"', path.read_text(encoding="utf-8")))
    unlogged = set(frame_types.TYPES) - frame_types.LOGGED
    assert unlogged <= named, unlogged - named
    assert named <= set(frame_types.TYPES), named - set(frame_types.TYPES)


def test_each_builder_makes_its_own_catalogued_type() -> None:
    done = frame_types.Done(answer="A [1].", sources=[], checks={}, usage={}, timing={},
                            index="v1", language="en", answer_language="en",
                            language_differs=False, answer_form="prose", mode="workflow")
    built = {
        "accepted": frame_types.accepted("t"), "event": frame_types.event("t", "retrieve", 1, 2),
        "token": frame_types.token("t", "A"), "restart": frame_types.restart("t", 2),
        "done": frame_types.done("t", done), "error": frame_types.error("t", None, 500, "x"),
        "ping": frame_types.ping(), "pong": frame_types.pong(),
        "reconnect": frame_types.reconnect()}
    assert set(built) == set(frame_types.TYPES)
    for name, frame in built.items():
        assert frame["type"] == name
        if frame_types.TYPES[name].logged:
            assert frame["turn"] == "t", name
    # An optional done field left None is not sent; every other one is.
    assert set(built["done"]) == {"type", "turn"} | {
        f.name for f in frame_types.DONE_FIELDS if not f.metadata.get("optional")}
    with_tools = frame_types.done("t", dataclasses.replace(done, tools={"calls": 1}))
    assert with_tools["tools"] == {"calls": 1}


def test_an_error_frame_carries_the_public_sentence_only() -> None:
    limited = frame_types.error_of(RateLimited("internal words", retry_after=7), "t", 3)
    assert limited == {"type": "error", "turn": "t", "seq": 3, "code": 429,
                       "message": RateLimited.public_message, "retry_after": 7}
    timed = frame_types.error_of(TimedOut("internal words"))
    assert "retry_after" not in timed and "internal" not in timed["message"]


def test_every_declared_check_has_a_runner_and_a_warning() -> None:
    assert set(RUNNERS) == set(checks.NAMES)
    for c in checks.CHECKS:
        assert c.warning({"valid": False}), c.name
    graded = [c.metric for c in checks.GRADED]
    assert len(graded) == len(set(graded))


# The panel's texts about checks that belong to no one check (web/static/panel-i18n.js).
GENERIC_CHECK_TEXTS = {"title", "weak", "unavailable", "failed"}
CHECK_TEXT_VARIANTS = {"none", "many", "item", "unavailable"}


def _panel_texts() -> dict[str, dict[str, str]]:
    """panel-i18n.js's tables, language -> key -> text."""
    js = (STATIC / "panel-i18n.js").read_text(encoding="utf-8")
    tables = {}
    for lang, body in re.findall(r"\n  ([a-z]{2}): \{\n(.*?)\n  \}", js, re.DOTALL):
        tables[lang] = dict(re.findall(r'^\s*"([^"]+)": "((?:[^"\\]|\\.)*)",?$', body,
                                       re.MULTILINE))
    return tables


def test_the_panels_check_wording_covers_exactly_the_registered_checks() -> None:
    """The panel words a check from panel-i18n.js alone: a text per registered check in each
    language, none for a check the registry lacks, and each {placeholder} a field of its block."""
    tables = _panel_texts()
    assert set(tables) == {"en", "cs"}
    for lang, table in tables.items():
        worded: dict[str, set[str]] = {}
        for key in table:
            if key.startswith("checks.") and key.split(".")[1] not in GENERIC_CHECK_TEXTS:
                name, _, variant = key.removeprefix("checks.").partition(".")
                worded.setdefault(name, set()).add(variant)
        assert set(worded) == set(checks.NAMES), (lang, set(worded) ^ set(checks.NAMES))
        for name, variants in worded.items():
            assert "" in variants, f"{lang}: checks.{name} has variants but no sentence"
            assert variants - {""} <= CHECK_TEXT_VARIANTS, (lang, name, variants)
            fields = set(checks.BY_NAME[name].fields) | {"item"}
            for variant in variants:
                key = f"checks.{name}" + (f".{variant}" if variant else "")
                used = set(re.findall(r"\{(\w+)\}", table[key]))
                assert used <= fields, f"{lang} {key}: {used - fields} is no field of its block"
        for key in (f"checks.{g}" for g in GENERIC_CHECK_TEXTS):
            assert key in table, (lang, key)


def test_the_panels_code_names_no_check_in_its_warnings() -> None:
    """warnings() iterates the done frame's checks block: no check's text is chosen in code."""
    for path in STATIC.glob("panel*.js"):
        if path.name == "panel-i18n.js":
            continue
        named = re.findall(r'"checks\.([a-z_]+)', path.read_text(encoding="utf-8"))
        assert set(named) <= GENERIC_CHECK_TEXTS, (path.name, named)
