"""Test fixtures: real Redis, PostgreSQL+pgvector, model servers, Celery workers and web servers.

Services are started by the tests themselves (reused when one already answers on the test
ports); nothing is skipped because a service is missing.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.allocate import Allocator

REPO = Path(__file__).resolve().parent.parent
# Two test sessions can run side by side on one machine: BA_TEST_PORT_OFFSET moves every port
# (and gives the session its own data folders). Every session has a Redis server of its own:
# on the machine's Redis (6379) the suite's workers would share Celery's queue with a
# `make run` stack's and answer its users' turns from the test index.
OFFSET = int(os.environ.get("BA_TEST_PORT_OFFSET", "0"))
VAR = REPO / "var" / ("test" if OFFSET == 0 else f"test-{OFFSET}")
REDIS_PORT = 6400 + OFFSET

# Every port and Redis database of the session, claimed by name (tests/allocate.py): the
# services' well-known ports below, each stack's web port and broker database, and whatever a
# test module starts of its own. The `web` pool is the test environment's allowed origins.
ALLOC = Allocator(OFFSET, {"web": range(8010, 8050), "other": range(8050, 8090),
                           "redis": range(7380, 7400)}, REDIS_PORT, databases=64)


def port(base: int) -> int:
    """A port moved by the session's offset. For the bench scripts; tests claim theirs from
    ALLOC."""
    return base + OFFSET


def redis_url(db: int, redis_port: int | None = None) -> str:
    """A Redis URL of this test session. For the bench scripts; tests claim a database from
    ALLOC."""
    return f"redis://127.0.0.1:{redis_port or REDIS_PORT}/{db}"


ALLOC.fixed_port("session redis", REDIS_PORT - OFFSET)
PG_PORT = ALLOC.fixed_port("postgresql", 5434)
CHAT_PORT = ALLOC.fixed_port("chat model server", 8091)
EMBED_PORT = ALLOC.fixed_port("embedding server", 8092)
TRANSLATOR_PORT = ALLOC.fixed_port("translator server", 8093)
SCRIPTED_PORT = ALLOC.fixed_port("scripted_llm", 8095)
# The session stacks' web ports (WEB_PORT first: docs/running.md says web servers from 8010).
WEB_PORT = ALLOC.port("real_stack")
SCRIPTED_WEB_PORT = ALLOC.port("scripted_stack")
STRICT_WEB_PORT = ALLOC.port("strict_stack")
PROJECT_WEB_PORT = ALLOC.port("project_stack")
QUOTES_WEB_PORT = ALLOC.port("quotes_stack")
DEMO_APP_PORT = ALLOC.port("demo_app")
DEMO_APP_OPT_OUT_PORT = ALLOC.port("demo_app_opt_out")
# Each stack's broker database: a stack's worker takes only its own stack's turns. The test
# settings' own is for in-process apps and clients (`settings`), never a stack's.
DEFAULT_REDIS_URL = ALLOC.redis_url("settings")
REAL_REDIS_URL = ALLOC.redis_url("real_stack")
SCRIPTED_REDIS_URL = ALLOC.redis_url("scripted_stack")
STRICT_REDIS_URL = ALLOC.redis_url("strict_stack")
PROJECT_REDIS_URL = ALLOC.redis_url("project_stack")
QUOTES_REDIS_URL = ALLOC.redis_url("quotes_stack")

TEST_ENV = {
    "ASSISTANT_PROFILE": "test",
    "ASSISTANT_REDIS_URL": DEFAULT_REDIS_URL,
    "ASSISTANT_CORPUS_DSN": f"postgresql://corpus_owner@127.0.0.1:{PG_PORT}/corpus",
    "ASSISTANT_CORPUS_READ_DSN": f"postgresql://corpus_reader@127.0.0.1:{PG_PORT}/corpus",
    "ASSISTANT_DB_DSN": f"postgresql://assistant@127.0.0.1:{PG_PORT}/assistant",
    "ASSISTANT_ANSWER_LLM_BASE_URL": f"http://127.0.0.1:{CHAT_PORT}/v1",
    "ASSISTANT_LLM_BASE_URL": f"http://127.0.0.1:{CHAT_PORT}/v1",
    "ASSISTANT_EMBEDDING_BASE_URL": f"http://127.0.0.1:{EMBED_PORT}/v1",
    "ASSISTANT_TRANSLATOR_BASE_URL": f"http://127.0.0.1:{TRANSLATOR_PORT}/v1",
    "ASSISTANT_MAX_OUTPUT_TOKENS": "200",
    # What the suite's turns search must not hang on how busy the machine is: the deadline on
    # the offline translator has tests of its own (test_crosslingual.py).
    "ASSISTANT_TRANSLATE_DEADLINE_S": "60",
    # The suite's stacks test the model's path (scripted or real): prose. quotes_stack runs
    # the default (`auto`, quotes with the bundled model).
    "ASSISTANT_ANSWER_FORM": "prose",
    # Named, so `run` serves these small docs rather than the BeCoMe corpus found in ../shared.
    "ASSISTANT_CORPUS_MANIFEST": "corpus_jobs/manifests/default.toml",
    # The suite sends many messages as one user from one address: generous quotas here;
    # tests/test_limits.py and the hardening tests exercise the real ones.
    "ASSISTANT_USER_MESSAGE_LIMIT": "100000/hour",
    "ASSISTANT_CLIENT_REQUEST_LIMIT": "100000/minute",
    # Every test client is 127.0.0.1, and the windows live in Redis across sessions.
    "ASSISTANT_CLIENT_MESSAGE_LIMIT": "100000/hour",
    "ASSISTANT_GLOBAL_MESSAGE_LIMIT": "1000000/hour",
    "ASSISTANT_MAX_TURNS_PER_USER": "4",
    "ASSISTANT_MAX_SOCKETS_PER_USER": "1000",
    "ASSISTANT_MAX_SOCKETS_PER_ADDRESS": "1000",
    "ASSISTANT_APP_JWT_SECRET": "test-secret-for-the-test-profile-only-0123456789",
    "ASSISTANT_ALLOWED_ORIGINS": ",".join(
        f"http://{h}:{p}" for h in ("127.0.0.1", "localhost") for p in ALLOC.pools["web"]),
}
# Settings are read once per process: set the test environment before anything reads it.
for _k in [k for k in os.environ if k.startswith("ASSISTANT_")]:
    del os.environ[_k]
os.environ.update(TEST_ENV)

from assistant_cli import stack  # noqa: E402
from assistant_cli.run import Plan, start_processes, start_services  # noqa: E402
from corpus_jobs.build import build_index  # noqa: E402
from corpus_jobs.manifest import load_manifest  # noqa: E402
from shared.config import INSECURE_DEV_SECRET, Settings, settings_from_env  # noqa: E402

# The test tiers, marked from the fixtures a test uses (directly or through other fixtures):
# `stack` starts real services (Redis, PostgreSQL, model servers, Celery, gunicorn), `browser`
# drives headless Chromium. `make test-fast` runs the rest (docs/developing.md).
STACK_FIXTURES = frozenset({"services", "scripted_llm", "demo_app", "redis_server", "redis_up",
                            "gguf_server", "gemma", "broker"})
BROWSER_FIXTURES = frozenset({"browser", "chromium"})
# Modules that run the stack's own native binaries (llama.cpp, PostgreSQL, pgvector) though no
# service fixture: under an emulated CPU, about 150 s.
STACK_MODULES = frozenset({"test_portable_binaries"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "last: runs after every other test of the session (a "
                            "scan of what the whole run left behind), whatever its file name")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier; move the tests marked `last` to the end, in their order."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & STACK_FIXTURES or any(n.endswith("_stack") for n in names) \
                or item.path.stem in STACK_MODULES:
            item.add_marker(pytest.mark.stack)
        if names & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)  # stable


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Leave the session's table of ports and Redis databases beside its logs."""
    if session.testscollected:
        VAR.mkdir(parents=True, exist_ok=True)
        (VAR / "allocations.txt").write_text(ALLOC.table() + "\n")


@dataclass(frozen=True)
class Stack:
    """A running web + worker pair and how to reach it."""

    name: str
    base_url: str
    env: dict[str, str]
    settings: Settings
    sup: stack.Supervisor


@pytest.fixture(scope="session")
def alloc() -> Allocator:
    """The session's allocator (tests/allocate.py): claim a port or Redis database by name,
    once (from a session- or module-scoped fixture; a module constant is the usual way)."""
    return ALLOC


@pytest.fixture(scope="session")
def settings() -> Settings:
    """The test Settings."""
    return settings_from_env(TEST_ENV)


@pytest.fixture(scope="session")
def services(settings: Settings) -> Iterator[stack.Supervisor]:
    """Redis, PostgreSQL+pgvector, the real chat and embedding servers, and a built index."""
    sup = stack.Supervisor(VAR / "log")
    try:
        ensure_session_redis(sup)
        start_services(settings, sup, Plan(var_dir=VAR))
        forget_rate_windows()
        build_index(settings, load_manifest(settings.corpus_manifest))
        yield sup
    finally:
        sup.stop_all()


def ensure_session_redis(sup: stack.Supervisor) -> None:
    """The session's Redis server, with a database for every claim of ALLOC: reused when it
    answers (and has as many), else started under sup.

    Every fixture that needs the session's Redis without `services` starts it here, never
    with `stack.ensure_redis` (a plain Redis has only 16 databases)."""
    import redis

    url = redis_url(0)
    if not stack.redis_answers(url):
        (VAR / "redis").mkdir(parents=True, exist_ok=True)
        proc = sup.start("redis", [stack.redis_server_binary(), "--bind", "127.0.0.1",
                                   "--port", str(REDIS_PORT), "--save", "", "--appendonly", "no",
                                   "--dir", str(VAR / "redis"),
                                   "--databases", str(ALLOC.databases)])
        stack.wait_until(lambda: stack.redis_answers(url), 20, "redis", proc)
    have = int(redis.Redis.from_url(url).config_get("databases")["databases"])
    if have < ALLOC.databases:
        raise RuntimeError(
            f"the Redis on port {REDIS_PORT} has {have} databases, the suite needs "
            f"{ALLOC.databases} (tests/allocate.py): one started by an earlier session or by "
            f"hand still runs; stop it (redis-cli -p {REDIS_PORT} shutdown nosave)")


def forget_rate_windows() -> None:
    """Drop the rate-limit windows earlier sessions left in the test Redis databases.

    They outlive a session (an hour for the message quotas), and the strict stacks of the
    limit tests would otherwise start over quota. Only `ba:rate*` keys, never the broker's.
    """
    import redis

    from shared import keys

    for db in range(ALLOC.databases):
        client = redis.Redis.from_url(redis_url(db))
        names = list(client.scan_iter(match=f"{keys.RATE_PREFIX}*", count=1000))
        if names:
            client.delete(*names)


def start_scripted(sup: stack.Supervisor) -> str:
    """Start (or reuse) the scripted OpenAI-compatible server; its base URL."""
    base = f"http://127.0.0.1:{SCRIPTED_PORT}"
    if not stack.http_ok(base + "/v1/models"):
        proc = sup.start("scripted-llm", [sys.executable, "-m", "tests.scripted_llm",
                                          str(SCRIPTED_PORT)], cwd=REPO)
        stack.wait_until(lambda: stack.http_ok(base + "/v1/models"), 20, "scripted-llm", proc)
    return base


@pytest.fixture(scope="session")
def scripted_llm(services: stack.Supervisor) -> Iterator[str]:
    """The scripted OpenAI-compatible server (stands in for an external model)."""
    yield start_scripted(services)


def stack_env(overrides: dict[str, str]) -> dict[str, str]:
    """The environment of a test stack's processes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(TEST_ENV)
    env.update(overrides)
    return env


def start_worker(sup: stack.Supervisor, name: str, env: dict[str, str]) -> None:
    """One more Celery worker process for a stack."""
    start_processes(sup, Plan(var_dir=VAR, name=name, worker_concurrency=4, web=False,
                              beat=False, flower=False), env=env)


def start_stack(services: stack.Supervisor, name: str, web_port: int,
                overrides: dict[str, str]) -> Stack:
    """Start a Celery worker and a gunicorn web server with the test env plus overrides."""
    env = stack_env(overrides)
    sup = stack.Supervisor(VAR / "log")
    try:
        start_processes(sup, Plan(var_dir=VAR, name=name, web_bind=f"127.0.0.1:{web_port}",
                                  web_workers=1, worker_concurrency=4, beat=False,
                                  flower=False), env=env)
    except BaseException:
        # A web server that cannot start must not leave its worker behind: it would keep
        # taking turns from the broker database it shares with a later stack.
        sup.stop_all()
        raise
    return Stack(name, f"http://127.0.0.1:{web_port}", env, settings_from_env(env), sup)


# The demo page's anonymous visitor gets a token from POST /api/v1/dev/token, which needs the
# opt-in and the dev secret (shared/config.py); the stacks the panel is tested on set both.
DEMO_TOKENS = {"ASSISTANT_DEV_TOKENS": "true", "ASSISTANT_APP_JWT_SECRET": INSECURE_DEV_SECRET}


def scripted_roles(scripted_llm: str) -> dict[str, str]:
    """Answer and translation roles on the scripted server."""
    return {"ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted_llm}/v1",
            "ASSISTANT_ANSWER_LLM_MODEL": "scripted",
            "ASSISTANT_LLM_BASE_URL": f"{scripted_llm}/v1",
            "ASSISTANT_LLM_MODEL": "scripted"}


@contextmanager
def bench_services() -> Iterator[tuple[stack.Supervisor, str]]:
    """For bench scripts: the test services, a built index and the scripted server; all
    stopped on exit (SIGTERM included)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    settings = settings_from_env(TEST_ENV)
    sup = stack.Supervisor(VAR / "log")
    try:
        ensure_session_redis(sup)
        start_services(settings, sup, Plan(var_dir=VAR))
        build_index(settings, load_manifest(settings.corpus_manifest))
        yield sup, start_scripted(sup)
    finally:
        sup.stop_all()


@pytest.fixture(scope="session")
def real_stack(services: stack.Supervisor) -> Iterator[Stack]:
    """Web + worker answering with the real local model (SmolLM2 on llama.cpp) in prose (the
    default `auto` form would answer in quotes with it: quotes_stack)."""
    s = start_stack(services, "real", WEB_PORT, {"ASSISTANT_REDIS_URL": REAL_REDIS_URL,
                                                  **DEMO_TOKENS})
    try:
        yield s
    finally:
        s.sup.stop_all()


@pytest.fixture(scope="session")
def quotes_stack(services: stack.Supervisor, demo_app: str) -> Iterator[Stack]:
    """Web + worker with the default settings (answer form `auto`: quotes with the bundled
    model), the demo app for project questions."""
    s = start_stack(services, "quotes", QUOTES_WEB_PORT, {
        "ASSISTANT_REDIS_URL": QUOTES_REDIS_URL, "ASSISTANT_APP_API_URL": demo_app,
        "ASSISTANT_ANSWER_FORM": "auto"})
    try:
        yield s
    finally:
        s.sup.stop_all()


@pytest.fixture(scope="session")
def scripted_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    """Web + worker whose answer role is the scripted server (exact model output)."""
    s = start_stack(services, "scripted", SCRIPTED_WEB_PORT, {
        "ASSISTANT_REDIS_URL": SCRIPTED_REDIS_URL,
        **DEMO_TOKENS,
        **scripted_roles(scripted_llm),
        # The bad-input test fires hundreds of frames at once; strict_stack keeps the cap.
        "ASSISTANT_WS_FRAMES_PER_SECOND": "100000",
    })
    try:
        yield s
    finally:
        s.sup.stop_all()


@pytest.fixture(scope="session")
def strict_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    """Sources off and short time limits (keep-alive 1 s, first token 3 s, answer 8 s)."""
    s = start_stack(services, "strict", STRICT_WEB_PORT, {
        "ASSISTANT_REDIS_URL": STRICT_REDIS_URL,
        **DEMO_TOKENS,
        **scripted_roles(scripted_llm),
        "ASSISTANT_SHOW_SOURCES": "false",
        "ASSISTANT_PING_INTERVAL_S": "1",
        "ASSISTANT_FIRST_TOKEN_TIMEOUT_S": "3",
        "ASSISTANT_ANSWER_TIMEOUT_S": "8",
        "ASSISTANT_TRANSLATE_QUERIES": "on",
    })
    try:
        yield s
    finally:
        s.sup.stop_all()


def set_script(base: str, chunks: list[str], **kwargs: float) -> None:
    """Set the scripted server's next answer."""
    from assistant_cli.client import http_json

    status, _ = http_json("POST", f"{base}/_script", {"chunks": chunks, **kwargs})
    assert status == 200


def wait_for(check, timeout_s: float = 30.0, interval: float = 0.2) -> bool:  # type: ignore[no-untyped-def]
    """Poll check() until it is true or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


@pytest.fixture(scope="session")
def demo_app(services: stack.Supervisor) -> Iterator[str]:
    """The demo BeCoMe app (real HTTP, its own database on the test PostgreSQL); its URL."""
    from assistant_cli.demo import bootstrap_demo_db, start_demo_app

    dsn = bootstrap_demo_db(f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres")
    sup = stack.Supervisor(VAR / "log")
    try:
        yield start_demo_app(sup, DEMO_APP_PORT, dsn, stack_env({}))
    finally:
        sup.stop_all()


@pytest.fixture(scope="session")
def demo_app_opt_out(services: stack.Supervisor, demo_app: str) -> Iterator[str]:
    """A second demo app on the same database with its optional opt-out extension switched on
    (members carry `hidden_from_assistants`, which the real app lacks); its URL."""
    from assistant_cli.demo import bootstrap_demo_db, start_demo_app
    from demo_app.app import OPT_OUT_ENV

    dsn = bootstrap_demo_db(f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres")
    sup = stack.Supervisor(VAR / "log" / "demo-opt-out")  # its own demo-app.log
    try:
        yield start_demo_app(sup, DEMO_APP_OPT_OUT_PORT, dsn, stack_env({OPT_OUT_ENV: "1"}))
    finally:
        sup.stop_all()


@pytest.fixture(scope="session")
def project_stack(services: stack.Supervisor, scripted_llm: str, demo_app: str
                  ) -> Iterator[Stack]:
    """Web + worker reading projects from the demo app; the scripted model captures input."""
    s = start_stack(services, "project", PROJECT_WEB_PORT, {
        "ASSISTANT_REDIS_URL": PROJECT_REDIS_URL,
        "ASSISTANT_APP_API_URL": demo_app,
        "ASSISTANT_DEV_LOGIN": "true",  # the demo page's sign-in (panel tests)
        **scripted_roles(scripted_llm),
    })
    try:
        yield s
    finally:
        s.sup.stop_all()
