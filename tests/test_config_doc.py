"""docs/configuration.md is the declarations' own rendering, and every variable is declared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared import config, config_doc

REPO = Path(__file__).resolve().parent.parent
PRODUCT = ("web", "worker", "shared", "corpus_jobs", "assistant_cli", "demo_app")
# Named in a comment as an example of an identifier (another project's variable), not read.
NOT_OURS = {"ASSISTANT_CAPTIONS_FILE"}


def test_the_committed_document_is_the_declarations_rendering() -> None:
    committed = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == config_doc.render(), "run: python -m shared.config_doc"
    assert config_doc.main(["--check"]) == 0


def test_every_setting_role_and_process_variable_is_in_the_document() -> None:
    text = config_doc.render()
    names = [d.env for d in config.DECLARED.values()] + [v.env for v in config.PROCESS_VARS]
    assert len(names) == len(set(names)), "two declarations share a variable"
    for name in names:
        assert f"`{name}`" in text, name
    for spec in config.ROLE_SPECS:
        assert f"`ASSISTANT_{spec.prefix}_*`" in text and spec.meaning, spec.name


def test_a_declaration_change_changes_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a setting added to the table is a row the old file lacks."""
    extra = config.Declared("ASSISTANT_SOMETHING_NEW", config.TEXT, "a new setting")
    monkeypatch.setattr(config_doc, "DECLARED", {**config.DECLARED, "profile": extra})
    assert "`ASSISTANT_SOMETHING_NEW`" in config_doc.render()
    assert config_doc.main(["--check"]) == 1


def test_every_variable_the_code_names_is_declared() -> None:
    """A variable read somewhere without a declaration would be missing from the docs."""
    known = {d.env for d in config.DECLARED.values()} | {v.env for v in config.PROCESS_VARS}
    for spec in config.ROLE_SPECS:
        known |= set(spec.variables)
        known |= {f"ASSISTANT_{spec.prefix}_LLM_MODEL", f"ASSISTANT_{spec.prefix}_LLM_BASE_URL"}
    prefixes = {f"ASSISTANT_{spec.prefix}" for spec in config.ROLE_SPECS}  # "ASSISTANT_JUDGE_*"
    unknown = set()
    for package in PRODUCT:
        for path in (REPO / package).rglob("*.py"):
            for name in re.findall(r"ASSISTANT_[A-Z0-9_]*[A-Z0-9]", path.read_text("utf-8")):
                if name not in known | prefixes | NOT_OURS:
                    unknown.add(f"{path.relative_to(REPO)}: {name}")
    assert not unknown, sorted(unknown)


def test_the_readme_links_the_document_instead_of_a_table() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/configuration.md" in readme
    assert not re.search(r"^\| `ASSISTANT_", readme, re.MULTILINE)
