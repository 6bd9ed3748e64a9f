"""`become-assistant run` (what `make run` starts) comes up, answers, and Ctrl-C stops it all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

from assistant_cli import stack
from tests.conftest import ALLOC, REPO, TEST_ENV, VAR, wait_for
from tests.wsutil import http_json

WEB = ALLOC.port("`run` in test_run_command")
FLOWER = ALLOC.port("`run`'s flower in test_run_command", pool="other")
REDIS_URL = ALLOC.redis_url("`run` in test_run_command")  # its beat and worker's own


def test_run_starts_everything_and_sigint_leaves_nothing(services: stack.Supervisor) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(TEST_ENV, ASSISTANT_REDIS_URL=REDIS_URL)
    out = VAR / "run-command.out"
    with open(out, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "assistant_cli.cli", "run", "--bind", f"127.0.0.1:{WEB}",
             "--flower-port", str(FLOWER), "--var", str(VAR / "run")],
            cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: b"is running" in out.read_bytes() or proc.poll() is not None,
                        120), out.read_text()
        assert proc.poll() is None, out.read_text()
        text = out.read_text()
        assert f"Panel:  http://127.0.0.1:{WEB}/" in text
        assert "Corpus: the assistant's own documentation" in text.splitlines()[0]
        assert f"Flower: http://127.0.0.1:{FLOWER}/" in text
        children = psutil.Process(proc.pid).children(recursive=True)
        names = " ".join(" ".join(c.cmdline()) for c in children)
        for part in ("worker", "beat", "flower", "gunicorn"):
            assert part in names, f"{part} not started"
        assert wait_for(lambda: http_json("GET", f"http://127.0.0.1:{WEB}/healthz")[0] == 200, 30)
        assert stack.http_ok(f"http://127.0.0.1:{FLOWER}/healthcheck")
        for name in ("turns-worker", "beat", "flower", "turns-web"):
            assert (VAR / "run" / "log" / f"{name}.log").exists(), name
        # The banner's demo sign-in works as it says, without make run's settings: `run`
        # alone printed it while the panel's sign-in answered 404.
        assert "Demo BeCoMe app:" in text, text
        status, body = http_json("POST", f"http://127.0.0.1:{WEB}/api/v1/dev/login",
                                 {"email": "alice@example.com", "password": "demo-password"})
        assert status == 201 and body["access_token"], status
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 0, out.read_text()
    time.sleep(0.5)
    alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [c.cmdline() for c in alive]
    assert "Stopped." in out.read_text()
