"""A setup under evaluation: where its web tier answers and what it runs (its provenance)."""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from shared.config import ModelRole, Settings, settings_from_env
from shared.errors import BadRequest

# Settings that change answers; recorded with every run (never secrets).
ANSWER_SETTINGS = ("answer_form", "top_k", "candidates", "retrieval_mode", "per_language_pools",
                   "lemmatize", "translate_queries", "rewrite_followups", "max_output_tokens",
                   "show_sources", "reasoning_effort", "corpus_manifest")


@dataclass(frozen=True)
class Setup:
    """A named setup: a running web tier at `url`, or (no url) one the harness starts with
    `env` on top of its own environment."""

    name: str
    url: str | None
    env: tuple[tuple[str, str], ...]

    def settings(self) -> Settings:
        """The settings this setup's server runs with (as far as the harness can know)."""
        return settings_from_env({**os.environ, **dict(self.env)})


def load_setup(path: str | None, default_url: str) -> Setup:
    """A setup TOML (name, url, [env] of ASSISTANT_* variables); no file: the running stack."""
    if path is None:
        return Setup("default", default_url, ())
    p = Path(path)
    if not p.is_file():
        raise BadRequest(f"no setup file at {path}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise BadRequest(f"{path}: not valid TOML ({exc})") from None
    unknown = set(data) - {"name", "url", "env"}
    if unknown:
        raise BadRequest(f"{path}: unknown keys {sorted(unknown)} (name, url, env)")
    env = data.get("env") or {}
    if not isinstance(env, dict) or any(not str(k).startswith("ASSISTANT_") for k in env):
        raise BadRequest(f"{path}: [env] may only hold ASSISTANT_* variables")
    if any("KEY" in k or "SECRET" in k for k in env):
        raise BadRequest(f"{path}: keep keys and secrets out of setup files (use the "
                         "environment)")
    return Setup(str(data.get("name") or p.stem), data.get("url"),
                 tuple(sorted((str(k), str(v)) for k, v in env.items())))


def prompt_hashes() -> dict[str, str]:
    """SHA-256 (first 16 hex) of every prompt file the worker reads."""
    folder = resources.files("worker").joinpath("prompts")
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest()[:16]
            for f in sorted(folder.iterdir(), key=lambda f: f.name) if f.name.endswith(".txt")}


def _role(role: ModelRole | None) -> dict[str, str] | None:
    if role is None:
        return None
    return {"provider": role.provider, "model": role.model, "base_url": role.base_url}


def provenance(setup: Setup) -> dict[str, Any]:
    """What the setup runs: mode, answer form, models per role, prompt hashes, settings."""
    s = setup.settings()
    return {
        "name": setup.name,
        "url": setup.url,
        "env": dict(setup.env),
        # Modes (docs/spec/behaviour.md B-20) other than workflow do not exist yet; the setting is
        # read when it does.
        "mode": str(getattr(s, "mode", "workflow")),
        "answer_form": s.answer_form,
        # Every configured role (the registry's order): one added to Settings is recorded too.
        "models": {r.name: _role(r) for r in s.roles},
        "prompts": prompt_hashes(),
        "settings": {k: getattr(s, k) for k in ANSWER_SETTINGS},
    }
