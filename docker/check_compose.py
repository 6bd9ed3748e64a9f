"""Check docker/compose.yaml against `make run`, without Docker: `.venv/bin/python docker/check_compose.py`.

No Docker engine runs on CI, so the compose file is kept in step with corpus_jobs/run.py and
corpus_jobs/stack.py by hand; this script is that hand check, repeatable. It records the argv
that run.py/stack.py would start (with a fake supervisor: nothing is started), applies the
intended container differences listed in EXPECTED_CHANGES, and compares the result with each
service's `command` in compose.yaml. It also checks the ASSISTANT_* block yields valid Settings
(dev), that the deployed profile refuses it, and the wiring (image, profiles, depends_on,
healthchecks). Not part of `make test` (it needs PyYAML, which the venv has through
llama-cpp-python[server]). Exits 1 on any mismatch.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from corpus_jobs import run, stack  # noqa: E402
from shared.config import settings_from_env  # noqa: E402
from shared.errors import ConfigError  # noqa: E402

COMPOSE = REPO / "docker" / "compose.yaml"
GGUF = "/opt/models/SmolLM2-135M-Instruct.Q4_1.gguf"
BEAT_SCHEDULE = "/var/lib/assistant/beat/celerybeat-schedule"

# run.py/stack.py process name -> (compose service, [(old argv item regex, new item)]).
# The only intended differences: listen on all interfaces, container paths, node name.
EXPECTED_CHANGES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "turns-worker": ("worker", [(r"^turns-\d+@%h$", "turns@%h")]),
    "beat": ("beat", [(r"^/VAR/celerybeat-schedule$", BEAT_SCHEDULE)]),
    "flower": ("flower", [(r"^--address=127\.0\.0\.1$", "--address=0.0.0.0")]),
    "turns-web": ("web", []),
    "llm-chat": ("llm-chat", [(r"^/GGUF$", GGUF), (r"^127\.0\.0\.1$", "0.0.0.0")]),
    "embeddings": ("embeddings", [(r"^127\.0\.0\.1$", "0.0.0.0")]),
}
PYTHON_SERVICES = ("index", "worker", "beat", "flower", "web", "llm-chat", "embeddings")
MODEL_SERVERS = {"llm-chat": 8081, "embeddings": 8082}
HEALTH_URLS = {"web": "http://127.0.0.1:8000/api/v1/ping",
               "flower": "http://127.0.0.1:5555/healthcheck",
               "llm-chat": "http://127.0.0.1:8081/v1/models",
               "embeddings": "http://127.0.0.1:8082/v1/models"}

failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class FakeSupervisor:
    """Records what run.py/stack.py would start."""

    def __init__(self) -> None:
        self.started: dict[str, tuple[list[str], dict[str, str] | None]] = {}

    def start(self, name: str, argv: Any, env: dict[str, str] | None = None,
              cwd: Path | None = None, user: str | None = None) -> stack.Proc:
        self.started[name] = (list(argv), env)
        return stack.Proc(name, None, Path(os.devnull))  # type: ignore[arg-type]


def recorded_processes() -> dict[str, tuple[list[str], dict[str, str] | None]]:
    stack.wait_until = lambda *a, **k: None
    stack.http_ok = lambda *a, **k: False
    stack.smollm2_gguf = lambda: Path("/GGUF")
    sup = FakeSupervisor()
    run.start_processes(sup, run.Plan(var_dir=Path("/VAR")), env={})  # type: ignore[arg-type]
    stack.start_chat_server(sup, 8081)  # type: ignore[arg-type]
    stack.start_embedding_server(sup, 8082)  # type: ignore[arg-type]
    return sup.started


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose-style ${VAR:-default} / ${VAR:?message}: defaults, or env, else a dummy."""
    def sub(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if env.get(name):
            return env[name]
        if op == ":-":
            return arg
        return "dummy-" + name.lower().replace("_", "-") + "-0123456789abcdef0123456789"
    return re.sub(r"\$\{(\w+)(:-|:\?)([^}]*)\}", sub, value)


def main() -> int:
    doc = yaml.safe_load(COMPOSE.read_text())
    services: dict[str, Any] = doc["services"]

    # 1. Commands match run.py / stack.py.
    for name, (argv, env) in recorded_processes().items():
        service, changes = EXPECTED_CHANGES[name]
        expected = ["python", *argv[1:]] if argv[0] == sys.executable else list(argv)
        for pattern, new in changes:
            expected = [new if re.match(pattern, a) else a for a in expected]
        got = services[service]["command"]
        check(got == expected, f"{service}: command matches {name} of make run")
        if got != expected:
            print(f"     compose: {got}\n     make run: {expected}")
        if env and name == "turns-web":
            svc_env = services["web"]["environment"]
            check(svc_env.get("ASSISTANT_WEB_WORKERS") == env["ASSISTANT_WEB_WORKERS"],
                  "web: ASSISTANT_WEB_WORKERS as run.py")
            check(svc_env.get("ASSISTANT_WEB_BIND") == "0.0.0.0:8000",
                  "web: ASSISTANT_WEB_BIND=0.0.0.0:8000")
        if env and name == "embeddings":
            check(services["embeddings"]["environment"].get("OMP_NUM_THREADS")
                  == env["OMP_NUM_THREADS"], "embeddings: OMP_NUM_THREADS as stack.py")
    check(services["index"]["command"] == ["become-assistant", "corpus", "build"],
          "index: become-assistant corpus build")
    check(services["redis"]["command"] == ["redis-server", "--save", "", "--appendonly", "no"],
          "redis: no persistence, as stack.ensure_redis")

    # 2. Wiring.
    images = {services[s].get("image") for s in PYTHON_SERVICES}
    builds = {str(services[s].get("build")) for s in PYTHON_SERVICES}
    check(len(images) == 1 and len(builds) == 1, "python services: one image, one build")
    check(services["web"]["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"},
          "build context is the repo root")
    check(services["redis"]["image"] == "redis:7"
          and services["postgres"]["image"] == "pgvector/pgvector:pg17", "service images")
    for s in MODEL_SERVERS:
        check(services[s].get("profiles") == ["local-models"], f"{s}: profile local-models")
    for s in services:
        if s not in MODEL_SERVERS:
            check("profiles" not in services[s], f"{s}: in the default profile")
    for s in ("worker", "web", "beat"):
        dep = services[s]["depends_on"]["index"]
        check(dep == {"condition": "service_completed_successfully"},
              f"{s}: starts after index completed")
    for s in ("index", "worker", "web"):
        for m in MODEL_SERVERS:
            dep = services[s]["depends_on"].get(m)
            if dep is not None:
                check(dep.get("required") is False,
                      f"{s}: depends on {m} only when local-models is on")
    for s, url in HEALTH_URLS.items():
        test = services[s]["healthcheck"]["test"]
        check(test[:3] == ["CMD", "python", "-c"] and url in test[3],
              f"{s}: healthcheck GET {url}")
    check("beat-schedule" in doc["volumes"]
          and f"beat-schedule:{Path(BEAT_SCHEDULE).parent}" in services["beat"]["volumes"],
          "beat: schedule file in the beat-schedule volume")

    # 3. The ASSISTANT_* block: valid for dev, refused by the deployed profile.
    raw_env = services["worker"]["environment"]
    for s in PYTHON_SERVICES:
        check(all(services[s]["environment"].get(k) == v for k, v in raw_env.items()),
              f"{s}: has the whole x-assistant-env block")
    required = sorted(k for k, v in raw_env.items() if ":?" in str(v))
    check({"ASSISTANT_APP_JWT_SECRET", "ASSISTANT_CORPUS_DSN",
           "ASSISTANT_CORPUS_READ_DSN"} <= set(required),
          f"required (${{VAR:?}}) settings: {required}")
    env = {k: interpolate(str(v), {}) for k, v in raw_env.items()}
    try:
        settings = settings_from_env(env)
        check(settings.profile == "dev" and all(r.provider == "local" for r in settings.roles)
              and settings.redis_url == "redis://redis:6379/0"
              and settings.answer.base_url == "http://llm-chat:8081/v1"
              and settings.embeddings.base_url == "http://embeddings:8082/v1",
              "x-assistant-env gives valid dev Settings pointing at the services")
    except ConfigError as exc:
        check(False, f"x-assistant-env gives valid dev Settings ({exc})")
    try:
        settings_from_env(dict(env, ASSISTANT_PROFILE="deployed"))
        check(False, "deployed profile refuses the local roles")
    except ConfigError as exc:
        check("must be provider=api" in str(exc), "deployed profile refuses the local roles")
    # What a hosted deployment puts in its .env (the same keys as the block uses).
    hosted = {"ASSISTANT_PROFILE": "deployed", "ASSISTANT_API_KEY": "k",
              "ASSISTANT_ALLOWED_ORIGINS": "https://assistant.example.org"}
    for role in ("ANSWER_LLM", "LLM", "EMBEDDING"):
        hosted[f"ASSISTANT_{role.removesuffix('_LLM')}_PROVIDER"] = "api"
        hosted[f"ASSISTANT_{role}_MODEL"] = "some-hosted-model"
        hosted[f"ASSISTANT_{role}_BASE_URL"] = "https://api.example.org/v1"
    hosted_env = {k: interpolate(str(v), hosted) for k, v in raw_env.items()}
    try:
        settings_from_env(hosted_env)
        check(True, "deployed profile accepts the block with every role provider=api")
    except ConfigError as exc:
        check(False, f"deployed profile accepts hosted roles ({exc})")

    print(f"\n{'all checks passed' if not failures else f'{len(failures)} check(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
