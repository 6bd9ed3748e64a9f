"""Settings: env parsing, profiles, and the production profile's refusals."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from shared import config
from shared.config import INSECURE_DEV_SECRET, ROLE_SPECS, ModelRole, RoleSpec, settings_from_env
from shared.errors import ConfigError

# A self-hosted production install: local models, a strong secret, stated origins and proxies.
PRODUCTION = {
    "ASSISTANT_PROFILE": "production",
    "ASSISTANT_APP_JWT_SECRET": "x" * 40,
    "ASSISTANT_ALLOWED_ORIGINS": "https://become.example",
    "ASSISTANT_TRUSTED_PROXIES": "none",
}
HOSTED = {
    **PRODUCTION,
    "ASSISTANT_API_KEY": "sk-hosted",
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
    assert not s.dev_tokens and not s.production


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


@pytest.mark.parametrize("env", [PRODUCTION, HOSTED, {**PRODUCTION, "ASSISTANT_ALLOWED_ORIGINS":
                                                      "http://127.0.0.1:8000"}])
def test_production_profile_accepts_local_and_hosted_installs(env: dict[str, str]) -> None:
    s = settings_from_env(env)
    assert s.profile == "production" and s.production


def test_deployed_is_the_old_name_of_production() -> None:
    assert settings_from_env({**PRODUCTION, "ASSISTANT_PROFILE": "deployed"}).production


SECRET_WEAK = "ASSISTANT_APP_JWT_SECRET must be set to a strong secret"
ORIGINS_UNSET = "ASSISTANT_ALLOWED_ORIGINS must be set"
ORIGINS_PLAIN = "ASSISTANT_ALLOWED_ORIGINS must be https origins"
PRODUCTION_REFUSED = "production profile refused: "


def production_problems(message: str) -> list[str]:
    """The problems a production refusal lists; fails when another check refused first."""
    assert message.startswith(PRODUCTION_REFUSED), f"not the production check: {message}"
    return message.removeprefix(PRODUCTION_REFUSED).split("; ")


@pytest.mark.parametrize("base, change, reasons", [
    (PRODUCTION, {"ASSISTANT_APP_JWT_SECRET": INSECURE_DEV_SECRET}, [SECRET_WEAK]),
    (PRODUCTION, {"ASSISTANT_APP_JWT_SECRET": "short"}, [SECRET_WEAK]),
    (PRODUCTION, {"ASSISTANT_APP_JWT_SECRET": ""}, [SECRET_WEAK]),
    (PRODUCTION, {"ASSISTANT_ALLOWED_ORIGINS": ""}, [ORIGINS_UNSET]),
    (PRODUCTION, {"ASSISTANT_ALLOWED_ORIGINS": "http://become.example"}, [ORIGINS_PLAIN]),
    (PRODUCTION, {"ASSISTANT_ALLOWED_ORIGINS": "http://127.0.0.1.evil.example"},
     [ORIGINS_PLAIN]),
    # Dev tokens need the dev secret (any profile), so production names both problems.
    (PRODUCTION, {"ASSISTANT_DEV_TOKENS": "true", "ASSISTANT_APP_JWT_SECRET": INSECURE_DEV_SECRET},
     [SECRET_WEAK, "ASSISTANT_DEV_TOKENS is never allowed in production"]),
    (HOSTED, {"ASSISTANT_API_KEY": ""},
     [f"model role {r} is hosted: ASSISTANT_API_KEY must be set"
      for r in ("answer", "translation", "embeddings")]),
    (HOSTED, {"ASSISTANT_EMBEDDING_BASE_URL": "http://api.example/v1"},
     ["model role embeddings is hosted: its base URL must be https"]),
], ids=["dev-secret", "short-secret", "no-secret", "no-origins", "http-origin",
        "look-alike-loopback-origin", "dev-tokens", "hosted-without-key", "hosted-over-http"])
def test_production_profile_refuses_unsafe_values(base: dict[str, str], change: dict[str, str],
                                                  reasons: list[str]) -> None:
    """Each unsafe value is refused by the production check for exactly its own reasons."""
    with pytest.raises(ConfigError) as err:
        settings_from_env({**base, **change})
    problems = production_problems(str(err.value))
    # Exactly the expected reasons are named: another check refusing instead (or as well)
    # fails the case.
    assert len(problems) == len(reasons), problems
    assert all(any(p.startswith(r) for p in problems) for r in reasons), problems
    assert "sk-hosted" not in str(err.value), "a refusal must not echo a secret"
    assert "x" * 40 not in str(err.value)


@pytest.mark.parametrize("missing", ["ASSISTANT_ALLOWED_ORIGINS", "ASSISTANT_TRUSTED_PROXIES"])
def test_production_profile_needs_origins_and_proxies_stated(missing: str) -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != missing}
    with pytest.raises(ConfigError, match=missing):
        settings_from_env(env)


def test_trusted_proxies_none_means_no_proxies_and_garbage_is_refused() -> None:
    assert settings_from_env({**PRODUCTION}).trusted_proxies == ""
    assert settings_from_env({"ASSISTANT_TRUSTED_PROXIES": "10.0.0.0/8, ::1"}).trusted_proxies
    with pytest.raises(ConfigError, match="ASSISTANT_TRUSTED_PROXIES"):
        settings_from_env({"ASSISTANT_TRUSTED_PROXIES": "the load balancer"})


def test_dev_tokens_need_the_opt_in_and_the_dev_secret() -> None:
    assert settings_from_env({"ASSISTANT_DEV_TOKENS": "true"}).dev_tokens
    with pytest.raises(ConfigError, match="ASSISTANT_DEV_TOKENS needs the dev secret"):
        settings_from_env({"ASSISTANT_DEV_TOKENS": "true",
                           "ASSISTANT_APP_JWT_SECRET": "a-real-app-secret-" + "y" * 30})


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


def test_a_hosted_translator_over_plain_http_is_refused_in_production() -> None:
    """The translator is a role like any other for the production check."""
    env = {**PRODUCTION, "ASSISTANT_API_KEY": "sk-hosted", "ASSISTANT_TRANSLATOR_PROVIDER": "api",
           "ASSISTANT_TRANSLATOR_BASE_URL": "http://other.example/v1"}
    with pytest.raises(ConfigError) as err:
        settings_from_env(env)
    assert production_problems(str(err.value)) == [
        "model role translator is hosted: its base URL must be https"]


def test_the_shared_key_never_reaches_a_translator_on_another_host() -> None:
    """The shared-key guard sees the translator too."""
    with pytest.raises(ConfigError, match="ASSISTANT_TRANSLATOR_API_KEY"):
        settings_from_env({"ASSISTANT_API_KEY": "sk-1", "ASSISTANT_ANSWER_PROVIDER": "api",
                           "ASSISTANT_ANSWER_BASE_URL": "https://api.example/v1",
                           "ASSISTANT_TRANSLATOR_PROVIDER": "api",
                           "ASSISTANT_TRANSLATOR_BASE_URL": "https://other.example/v1"})


def _hosted(spec: RoleSpec, url: str) -> dict[str, str]:
    return {f"ASSISTANT_{spec.prefix}_PROVIDER": "api", f"ASSISTANT_{spec.prefix}_MODEL": "m",
            f"ASSISTANT_{spec.prefix}_BASE_URL": url}


@pytest.mark.parametrize("spec", ROLE_SPECS, ids=lambda spec: spec.name)
def test_every_check_sees_every_role_of_the_registry(spec: RoleSpec) -> None:
    """Settings.roles, the production check and the shared-key guard iterate one registry."""
    assert spec.name in {r.name for r in settings_from_env(_hosted(spec, "https://a.example")).roles}
    with pytest.raises(ConfigError) as err:
        settings_from_env({**PRODUCTION, "ASSISTANT_API_KEY": "sk-hosted",
                           **_hosted(spec, "http://other.example/v1")})
    assert production_problems(str(err.value)) == [
        f"model role {spec.name} is hosted: its base URL must be https"]
    with pytest.raises(ConfigError) as err:
        settings_from_env({**PRODUCTION, **_hosted(spec, "https://a.example/v1")})
    assert f"model role {spec.name} is hosted: ASSISTANT_API_KEY must be set" in str(err.value)
    # Another hosted role on another host: the shared key may not go to both.
    other = next(o for o in ROLE_SPECS if o.name != spec.name)
    with pytest.raises(ConfigError, match=f"more than one host \\(roles .*{spec.name}"):
        settings_from_env({"ASSISTANT_API_KEY": "sk-1", **_hosted(other, "https://a.example/v1"),
                           **_hosted(spec, "https://b.example/v1")})


def test_every_model_role_of_settings_is_in_the_registry() -> None:
    """A ModelRole field added to Settings without a RoleSpec would escape every check."""
    hints = typing.get_type_hints(config.Settings)
    role_fields = {f.name for f in dataclasses.fields(config.Settings)
                   if ModelRole in (hints[f.name], *typing.get_args(hints[f.name]))}
    assert role_fields == {spec.name for spec in ROLE_SPECS}
    assert len({spec.prefix for spec in ROLE_SPECS}) == len(ROLE_SPECS)


def test_a_role_added_to_the_registry_is_seen_by_every_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Registering a role is all it takes: here the judge's field under a new prefix."""
    extra = RoleSpec("judge", "REVIEWER", optional=True)
    specs = tuple(s for s in ROLE_SPECS if s.name != "judge") + (extra,)
    monkeypatch.setattr(config, "ROLE_SPECS", specs)
    monkeypatch.setattr(config, "ROLE_PREFIX", {s.name: s.prefix for s in specs})
    with pytest.raises(ConfigError) as err:
        settings_from_env({**PRODUCTION, "ASSISTANT_API_KEY": "sk-hosted",
                           **_hosted(extra, "http://other.example/v1")})
    assert production_problems(str(err.value)) == [
        "model role judge is hosted: its base URL must be https"]
    with pytest.raises(ConfigError, match="ASSISTANT_REVIEWER_API_KEY"):
        settings_from_env({"ASSISTANT_API_KEY": "sk-1",
                           **_hosted(ROLE_SPECS[0], "https://a.example/v1"),
                           **_hosted(extra, "https://b.example/v1")})


def test_a_production_process_without_the_app_secret_verifies_no_token() -> None:
    """Workers, beat and the index build get no app secret. Unset, it is
    empty (never the dev secret) and the production check accepts that; set, it must be
    strong; the web tier refuses to start without it."""
    from web import create_app

    env = {k: v for k, v in PRODUCTION.items() if k != "ASSISTANT_APP_JWT_SECRET"}
    s = settings_from_env(env)
    assert s.production and s.app_jwt_secret == ""
    with pytest.raises(ConfigError, match="ASSISTANT_APP_JWT_SECRET"):
        create_app({"SETTINGS": s, "TESTING": True})
    assert settings_from_env({}).app_jwt_secret == INSECURE_DEV_SECRET  # dev: the dev secret


def test_an_empty_secret_verifies_no_token() -> None:
    import jwt

    from shared.auth import verify_access_token
    from shared.errors import Unauthorized

    token = jwt.encode({"sub": "u", "iat": 1, "exp": 2**31, "type": "access", "jti": "j"},
                       "k" * 32, algorithm="HS256")
    with pytest.raises(Unauthorized, match="no app secret"):
        verify_access_token(token, "")


def test_the_dev_login_is_never_allowed_in_production() -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_env({**PRODUCTION, "ASSISTANT_DEV_LOGIN": "true"})
    assert production_problems(str(err.value)) == [
        "ASSISTANT_DEV_LOGIN is never allowed in production"]
    assert not settings_from_env(PRODUCTION).dev_login
    assert settings_from_env({"ASSISTANT_DEV_TOKENS": "true"}).dev_login


def test_healthz_and_run_iterate_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """/healthz calls the roles marked `health`, `run` starts each local role's server by its
    `server` kind: both read the registry, so a role declared once is seen by both."""
    from assistant_cli.run import local_servers
    from web import health

    judge = {"ASSISTANT_JUDGE_MODEL": "j", "ASSISTANT_JUDGE_BASE_URL": "http://127.0.0.1:8084/v1"}
    s = settings_from_env(judge)
    assert [(r.name, kind) for r, kind in local_servers(s)] == [
        ("answer", "chat"), ("embeddings", "embeddings"), ("judge", "chat")]
    called: list[str] = []
    monkeypatch.setattr(health, "_model", lambda role: called.append(role.name) or {"ok": True})
    for part in ("_redis", "_worker"):
        monkeypatch.setattr(health, part, lambda *_: {"ok": True})
    monkeypatch.setattr(health, "_corpus", lambda *_: ({"ok": True}, {"ok": True}))
    health.check_health(s, None)  # type: ignore[arg-type]
    assert called == [spec.name for spec in ROLE_SPECS if spec.health] == [
        "answer", "translation", "embeddings", "translator"]
    called.clear()
    # A role checked only while used: the translator of a hosted translation role is not.
    hosted = settings_from_env({**judge, "ASSISTANT_LLM_PROVIDER": "api",
                                "ASSISTANT_LLM_BASE_URL": "https://llm.example/v1"})
    assert not hosted.fewshot_translates
    health.check_health(hosted, None)  # type: ignore[arg-type]
    assert called == ["answer", "translation", "embeddings"]
    specs = tuple(dataclasses.replace(spec, health=True) if spec.name == "judge" else spec
                  for spec in ROLE_SPECS)
    monkeypatch.setattr(config, "ROLE_SPECS", specs)
    called.clear()
    health.check_health(s, None)  # type: ignore[arg-type]
    assert "judge" in called


def test_each_role_field_is_declared_with_its_own_name() -> None:
    for spec in ROLE_SPECS:
        assert spec.meaning and (spec.optional or spec.default is not None), spec.name
        assert spec.default is None or spec.default.name == spec.name
