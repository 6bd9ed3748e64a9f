"""`become-assistant run`: every process of the product, in the foreground, stopped together."""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from urllib.parse import urlparse

from psycopg.conninfo import conninfo_to_dict

from assistant_cli import stack
from assistant_cli.answer_model import ServedModel, banner, served_model
from assistant_cli.gguf import GGUFError
from corpus_jobs.build import locked_build
from corpus_jobs.manifest import load_manifest, root_available
from shared.celery_config import QUEUES
from shared.config import (
    BUNDLED_ANSWER_MODEL,
    WEB_BIND,
    WEB_WORKERS,
    ModelRole,
    Settings,
    role_spec,
)
from shared.errors import ConfigError

LOOPBACK = ("127.0.0.1", "localhost")


def check_bind(settings: Settings, bind: str, allow_remote: bool) -> None:
    """Outside production the web server listens on loopback only, unless forced: the dev
    profile mints tokens for anyone (dev tokens) and trusts every caller on this machine."""
    if settings.production or allow_remote:
        return
    host = bind.rsplit(":", 1)[0].strip("[]") if ":" in bind else bind
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ConfigError(f"the {settings.profile} profile serves on loopback only, not {bind}: "
                      "use --bind 127.0.0.1:PORT, or pass --allow-remote to serve this "
                      "machine's network on purpose")


@dataclass(frozen=True)
class Plan:
    """Which processes to run and where."""

    var_dir: Path
    web_bind: str = "127.0.0.1:8000"
    flower_port: int = 5555
    web_workers: int = 2
    worker_concurrency: int = 8
    name: str = "turns"
    demo_port: int = 8030
    web: bool = True
    worker: bool = True
    beat: bool = True
    flower: bool = True


DEFAULT_MANIFEST = "corpus_jobs/manifests/default.toml"
BECOME_MANIFEST = "corpus_jobs/manifests/become.toml"


def choose_manifest(explicit: str | None, env: dict[str, str] | None = None) -> str:
    """The manifest `run` serves: --manifest, else ASSISTANT_CORPUS_MANIFEST, else the BeCoMe
    documentation when it is at hand (../shared, or ASSISTANT_BECOME_DOCS), else our own docs."""
    env = dict(os.environ) if env is None else env
    if explicit:
        return explicit
    if env.get("ASSISTANT_CORPUS_MANIFEST"):
        return env["ASSISTANT_CORPUS_MANIFEST"]
    return BECOME_MANIFEST if root_available(BECOME_MANIFEST) else DEFAULT_MANIFEST


def describe_corpus(manifest: str) -> str:
    """One line for the start-up banner: which corpus is served, from where."""
    m = load_manifest(manifest)
    what = ("the BeCoMe documentation" if m.name == "become"
            else "the assistant's own documentation" if m.name == "become-assistant-docs"
            else f"corpus {m.name!r}")
    line = f"Corpus: {what} ({m.root}; manifest {manifest})"
    if m.name != "become" and not root_available(BECOME_MANIFEST):
        line += ("\n  (the BeCoMe documentation was not found: put it in ../shared/corpus/become "
                 "or set ASSISTANT_BECOME_DOCS, or pass --manifest)")
    return line


def _celery(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "worker.celery_app", *args]


def start_demo_app(settings: Settings, sup: stack.Supervisor, plan: Plan) -> str | None:
    """In dev, with no app API configured, the demo BeCoMe app on the embedded PostgreSQL."""
    if settings.production or settings.app_api_url:
        return None
    from assistant_cli.demo import bootstrap_demo_db
    from assistant_cli.demo import start_demo_app as start

    owner = conninfo_to_dict(settings.corpus_dsn)
    if str(owner.get("host", "")) not in LOOPBACK:
        return None
    admin = f"postgresql://postgres@127.0.0.1:{int(owner.get('port') or 5432)}/postgres"
    env = dict(os.environ, ASSISTANT_APP_JWT_SECRET=settings.app_jwt_secret)
    return start(sup, plan.demo_port, bootstrap_demo_db(admin), env)


def served_answer_model(settings: Settings) -> ServedModel | None:
    """The user's answer GGUF as it will be served (ASSISTANT_ANSWER_GGUF), else None."""
    try:
        return served_model(settings)
    except GGUFError as exc:
        raise stack.StackError(str(exc)) from None


def local_servers(settings: Settings) -> list[tuple[ModelRole, str]]:
    """The model servers the roles want on this machine, one per port, each with its kind
    (the role registry's `server`); the translator's is started apart, only when used."""
    out: list[tuple[ModelRole, str]] = []
    ports: set[int | None] = set()
    for role in settings.roles:
        url = urlparse(role.base_url)
        server = role_spec(role.name).server
        if server == "translator" or role.provider != "local" \
                or url.hostname not in LOOPBACK or url.port in ports:
            continue
        ports.add(url.port)
        out.append((role, server))
    return out


def start_services(settings: Settings, sup: stack.Supervisor, plan: Plan) -> None:
    """Redis, the corpus PostgreSQL and the local model servers (reused when they answer)."""
    owner = conninfo_to_dict(settings.corpus_dsn)
    reader = conninfo_to_dict(settings.corpus_read_dsn)
    bundled = str(owner.get("host", "")) in LOOPBACK or any(
        r.provider == "local" and urlparse(r.base_url).hostname in LOOPBACK
        for r in settings.roles)
    if bundled:
        stack.check_cpu()
    stack.ensure_redis(sup, settings.redis_url, plan.var_dir / "redis")
    if str(owner.get("host", "")) in LOOPBACK:
        admin = stack.start_postgres(sup, plan.var_dir / "pg", int(owner.get("port") or 5432))
        stack.bootstrap_corpus_db(admin, str(owner["dbname"]), str(owner["user"]),
                                  str(reader["user"]))
    # Before any build: a vector cast, an HNSW index and a search, so a pgvector built for
    # another CPU stops us here with one sentence instead of killing a build half-way.
    pg = next((p for p in sup.procs if p.name == "postgres"), None)
    stack.probe_vector(settings.corpus_dsn, pg.log if pg else None)
    assistant = conninfo_to_dict(settings.assistant_dsn)
    if str(assistant.get("host", "")) in LOOPBACK:
        port = int(assistant.get("port") or 5432)
        same = port == int(owner.get("port") or 5432)
        admin = stack.start_postgres(sup, plan.var_dir / ("pg" if same else f"pg-{port}"), port)
        stack.bootstrap_app_db(admin, str(assistant["dbname"]), str(assistant["user"]))
    served = served_answer_model(settings)
    servers = local_servers(settings)
    for role, server in servers:
        model_port = urlparse(role.base_url).port
        assert model_port is not None
        if server == "embeddings":
            stack.start_embedding_server(sup, model_port)
        elif served is not None and role.model == served.alias:
            # The user's GGUF, for the answer role and the translation role alike.
            stack.start_chat_server(sup, model_port, model=served.path, alias=served.alias,
                                    n_ctx=served.n_ctx, chat_format=served.chat_format)
        elif role.model == BUNDLED_ANSWER_MODEL:
            stack.start_chat_server(sup, model_port)
        else:
            # A model we do not ship, on this machine (Ollama, vLLM, a llama.cpp of the
            # user's): its server is the user's to start.
            stack.check_model_server(role.base_url, role.model, role.name)
    started = {urlparse(role.base_url).port for role, _ in servers}
    translator = urlparse(settings.translator.base_url)
    if settings.fewshot_translates and settings.translator.provider == "local" \
            and translator.hostname in LOOPBACK and translator.port not in started:
        stack.start_translator_server(sup, translator.port or 80)


def start_processes(sup: stack.Supervisor, plan: Plan, env: dict[str, str] | None = None
                    ) -> None:
    """Celery worker, beat, Flower and the web server (children get `env`, else ours)."""
    env = dict(env if env is not None else os.environ, PYTHONUNBUFFERED="1")
    if plan.worker:
        proc = sup.start(f"{plan.name}-worker", _celery(
            "worker", "-Q", ",".join(QUEUES), "-P", "threads", "-c", str(plan.worker_concurrency),
            "-n", f"{plan.name}-{os.getpid()}@%h", "--loglevel", "INFO", "--without-gossip",
            "--without-mingle"), env=env)
        stack.wait_until(lambda: "ready." in stack.tail(proc.log, 200), 60, f"{plan.name}-worker", proc)
    if plan.beat:
        sup.start("beat", _celery("beat", "--loglevel", "INFO", "-s",
                                  str(plan.var_dir / "celerybeat-schedule")), env=env)
    if plan.flower:
        # Through the Host guard: a DNS-rebinding page gets 421 (assistant_cli/flower_guard.py).
        proc = sup.start("flower", [sys.executable, "-m", "assistant_cli.flower_guard",
                                    "--address=127.0.0.1", f"--port={plan.flower_port}"],
                         env=env)
        stack.wait_until(lambda: stack.http_ok(f"http://127.0.0.1:{plan.flower_port}/healthcheck"),
                         60, "flower", proc)
    if plan.web:
        web_env = dict(env, **{WEB_BIND.env: plan.web_bind,
                               WEB_WORKERS.env: str(plan.web_workers)})
        proc = sup.start(f"{plan.name}-web", [sys.executable, "-m", "gunicorn", "-c", "web/gunicorn_conf.py",
                                 "web.wsgi:app"], env=web_env)
        stack.wait_until(lambda: stack.http_ok(f"http://{plan.web_bind}/api/v1/ping"),
                         60, f"{plan.name}-web", proc)


def answer_form(settings: Settings) -> str:
    """The answer form turns are written in (auto resolved)."""
    return settings.effective_answer_form


BUILD_WAIT_S = 1800.0  # a first build on a slow machine embeds for minutes
BUILD_POLL_S = 5.0


def build_default_index(settings: Settings) -> None:
    """Build the configured index if it changed (a no-op otherwise)."""
    def progress(done: int, total: int) -> None:
        print(f"\r  embedding passages {done}/{total}", end="", file=sys.stderr, flush=True)

    started = time.monotonic()
    # Under the lock the CLI and beat share (docs/spec/behaviour.md B-10): a build they run waits,
    # or this waits for theirs and then finds the index current.
    manifest = load_manifest(settings.corpus_manifest)
    said = False
    while (report := locked_build(settings, manifest, progress=progress)) is None:
        if time.monotonic() - started > BUILD_WAIT_S:
            raise stack.StackError(f"another index build still holds the lock after "
                                   f"{BUILD_WAIT_S:.0f} s")
        if not said:
            print("  another index build is running; waiting for it", file=sys.stderr)
            said = True
        time.sleep(BUILD_POLL_S)
    shipped = (f" ({report.vectors_from_file} vectors from the corpus's vectors file)"
               if report.vectors_from_file else "")
    # The whole build, span vectors included (the report's seconds end at the swap).
    print(("\n" if report.embedded else "") + f"  index {report.version}: "
          f"{'unchanged' if report.no_op else 'built'}, {report.passages} passages, "
          f"{report.embedded} embedded{shipped}, {time.monotonic() - started:.1f}s")


def run_forever(settings: Settings, plan: Plan) -> int:
    """Start everything, print where to open it, and stop it all on SIGINT/SIGTERM."""
    sup = stack.Supervisor(plan.var_dir / "log")
    stopping: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        print(describe_corpus(settings.corpus_manifest), flush=True)
        served = served_answer_model(settings)
        answer_lines = banner(settings, served, answer_form(settings))
        print("Starting services (logs in var/log/)…", flush=True)
        start_services(settings, sup, plan)
        demo = start_demo_app(settings, sup, plan)
        if demo:
            # The web and worker processes read the app API's address from the environment;
            # the panel's demo sign-in, which the banner offers, is the web's opt-in.
            os.environ["ASSISTANT_APP_API_URL"] = demo
            os.environ.setdefault("ASSISTANT_DEV_LOGIN", "true")
        build_default_index(settings)
        start_processes(sup, plan)
        demo_lines = (f"  Demo BeCoMe app: {demo} (sign in on the panel as alice@example.com, "
                      "bob@example.com or carol@example.com, password demo-password)\n"
                      if demo else "")
        print(f"\nbecome-assistant is running.\n"
              f"  Panel:  http://{plan.web_bind}/\n"
              f"  Health: http://{plan.web_bind}/healthz\n"
              f"  Flower: http://127.0.0.1:{plan.flower_port}/\n"
              f"{demo_lines}"
              + "".join(line + "\n" for line in answer_lines) +
              "Press Ctrl-C to stop everything.", flush=True)
        while not stopping:
            dead = sup.check_alive()
            if dead is not None:
                print(f"{dead.name} exited (code {dead.popen.returncode}); see {dead.log}",
                      file=sys.stderr)
                return 1
            time.sleep(0.5)
        return 0
    except stack.StackError as exc:
        print(f"could not start: {exc}", file=sys.stderr)
        return 1
    finally:
        print("Stopping…", flush=True)
        sup.stop_all()
        print("Stopped.", flush=True)
