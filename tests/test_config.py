"""Settings: env parsing, profiles, and the deployed profile's refusals."""

from __future__ import annotations

import pytest

from shared.config import INSECURE_DEV_SECRET, settings_from_env
from shared.errors import ConfigError

HOSTED = {
    "ASSISTANT_PROFILE": "deployed",
    "ASSISTANT_APP_JWT_SECRET": "x" * 40,
    "ASSISTANT_API_KEY": "sk-hosted",
    "ASSISTANT_ALLOWED_ORIGINS": "https://become.example",
    **{f"ASSISTANT_{p}_PROVIDER": "api" for p in ("ANSWER", "LLM", "EMBEDDING")},
    **{f"ASSISTANT_{p}_BASE_URL": "https://api.example/v1" for p in ("ANSWER", "LLM",
                                                                      "EMBEDDING")},
    "ASSISTANT_ANSWER_LLM_MODEL": "big-model",
    "ASSISTANT_LLM_MODEL": "small-model",
    "ASSISTANT_EMBEDDING_MODEL": "bge-m3",
}


def test_defaults_are_local_and_offline() -> None:
    s = settings_from_env({})
    assert s.profile == "dev"
    assert all(r.provider == "local" for r in s.roles)
    assert all(r.base_url.startswith("http://127.0.0.1:") for r in s.roles)
    assert s.top_k == 3 and s.max_output_tokens == 800


def test_roles_are_configured_independently() -> None:
    s = settings_from_env({"ASSISTANT_ANSWER_PROVIDER": "api",
                           "ASSISTANT_ANSWER_LLM_MODEL": "gpt-x",
                           "ASSISTANT_ANSWER_LLM_BASE_URL": "https://api.example/v1/",
                           "ASSISTANT_API_KEY": "sk-1"})
    assert (s.answer.provider, s.answer.model, s.answer.base_url) == (
        "api", "gpt-x", "https://api.example/v1")
    assert s.translation.provider == "local"


def test_hosted_key_goes_only_to_api_roles() -> None:
    s = settings_from_env({"ASSISTANT_ANSWER_PROVIDER": "api", "ASSISTANT_API_KEY": "sk-1"})
    assert s.answer.key_for_request == "sk-1"
    assert s.translation.key_for_request != "sk-1"
    assert s.embeddings.key_for_request != "sk-1"
    assert "sk-1" not in repr(s)


def test_deployed_profile_accepts_a_hosted_configuration() -> None:
    s = settings_from_env(HOSTED)
    assert s.profile == "deployed"


@pytest.mark.parametrize("change, reason", [
    ({"ASSISTANT_ANSWER_PROVIDER": "local"}, "local role"),
    ({"ASSISTANT_API_KEY": ""}, "missing hosted key"),
    ({"ASSISTANT_APP_JWT_SECRET": INSECURE_DEV_SECRET}, "dev secret"),
    ({"ASSISTANT_APP_JWT_SECRET": "short"}, "weak secret"),
    ({"ASSISTANT_ALLOWED_ORIGINS": "http://become.example"}, "plain-http origin"),
    ({"ASSISTANT_EMBEDDING_BASE_URL": "http://api.example/v1"}, "plain-http model URL"),
])
def test_deployed_profile_refuses_unsafe_values(change: dict[str, str], reason: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_env({**HOSTED, **change})
    assert "sk-hosted" not in str(err.value), "a refusal must not echo a secret"


@pytest.mark.parametrize("env", [
    {"ASSISTANT_PROFILE": "prod"},
    {"ASSISTANT_TOP_K": "zero"},
    {"ASSISTANT_TOP_K": "-1"},
    {"ASSISTANT_SHOW_SOURCES": "maybe"},
    {"ASSISTANT_ANSWER_PROVIDER": "cloud"},
    {"ASSISTANT_TOP_K": "30", "ASSISTANT_CANDIDATES": "20"},
])
def test_invalid_values_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        settings_from_env(env)


@pytest.mark.parametrize("env, translates", [
    ({}, False),  # offline default: the local model knows no Czech (measured: it hurts)
    ({"ASSISTANT_LLM_PROVIDER": "api", "ASSISTANT_API_KEY": "k"}, True),
    ({"ASSISTANT_TRANSLATE_QUERIES": "on"}, True),
    ({"ASSISTANT_TRANSLATE_QUERIES": "off", "ASSISTANT_LLM_PROVIDER": "api"}, False),
])
def test_translation_of_czech_questions(env: dict[str, str], translates: bool) -> None:
    assert settings_from_env(env).translates is translates
