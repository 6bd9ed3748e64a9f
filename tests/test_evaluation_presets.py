"""A chat turn's retrieval config carries what settings choose; the research knobs and presets
live beside the evaluation code and default to the turn's ranking."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from shared.config import settings_from_env
from worker.evaluation import CHAT, load_config
from worker.evaluation_presets import PRESETS, ResearchConfig, research
from worker.pipeline.retrieve import RetrievalConfig

SETTINGS_FIELDS = {"mode", "candidates", "top_k", "per_language_pools", "lemmatize"}


def fixed_choices() -> set[str]:
    """The ranking's fixed choices: RetrievalConfig's class attributes that are not fields."""
    fields = {f.name for f in dataclasses.fields(RetrievalConfig)}
    return {name for name, value in vars(RetrievalConfig).items()
            if not name.startswith("_") and name not in fields
            and isinstance(value, (bool, int, float, str))}


def test_a_turns_config_carries_only_what_settings_choose() -> None:
    assert {f.name for f in dataclasses.fields(RetrievalConfig)} == SETTINGS_FIELDS
    moved = settings_from_env({"ASSISTANT_RETRIEVAL_MODE": "bm25", "ASSISTANT_CANDIDATES": "30",
                               "ASSISTANT_TOP_K": "5", "ASSISTANT_PER_LANGUAGE_POOLS": "true",
                               "ASSISTANT_LEMMATIZE": "true"})
    config = RetrievalConfig.from_settings(moved)
    assert config == RetrievalConfig(mode="bm25", candidates=30, top_k=5,
                                     per_language_pools=True, lemmatize=True)
    assert all(getattr(config, f) != getattr(RetrievalConfig(), f) for f in SETTINGS_FIELDS), \
        "every field is one setting's"
    knob: dict[str, Any] = {"per_section": 0}
    with pytest.raises(TypeError):
        dataclasses.replace(config, **knob)


def test_the_research_config_is_the_turns_ranking_with_every_choice_a_field() -> None:
    extra = {f.name for f in dataclasses.fields(ResearchConfig)} - SETTINGS_FIELDS
    assert extra == fixed_choices(), "each fixed choice is a research field, and no other"
    assert len(extra) >= 20
    turn = RetrievalConfig()
    assert all(getattr(ResearchConfig(), name) == getattr(turn, name) for name in extra)
    s = settings_from_env({"ASSISTANT_TOP_K": "4", "ASSISTANT_RETRIEVAL_MODE": "dense"})
    assert research(RetrievalConfig.from_settings(s)) == ResearchConfig.from_settings(s) \
        == ResearchConfig(mode="dense", top_k=4)
    assert research(PRESETS["hybrid-v1"]) is PRESETS["hybrid-v1"]
    # A preset's knob reaches the ranking through the same attribute the turn's config has.
    assert PRESETS["hybrid-v3"].caption_cs == 0.0 and turn.caption_cs == 1.0


def test_presets_and_settings_files_load_as_research_configs(tmp_path: Path) -> None:
    assert PRESETS["hybrid"] == ResearchConfig()
    for name, preset in PRESETS.items():
        assert isinstance(preset, ResearchConfig)
        assert load_config(name) == (preset, {})
    s = settings_from_env({})
    assert load_config(CHAT, s) == (RetrievalConfig.from_settings(s), {})
    toml = tmp_path / "slots.toml"
    toml.write_text('expand_czech = true\nenglish_slots = 1\ncorpus_read_dsn = "postgresql://x"\n')
    assert load_config(str(toml)) == (ResearchConfig(expand_czech=True, english_slots=1),
                                      {"corpus_read_dsn": "postgresql://x"})
    toml.write_text("english_slot = 1\n")
    with pytest.raises(ValueError, match="english_slot"):
        load_config(str(toml))
