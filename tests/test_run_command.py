"""`become-assistant run` (what `make run` starts) comes up, answers, and Ctrl-C stops it all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

from corpus_jobs import stack
from tests.conftest import REPO, TEST_ENV, VAR, wait_for
from tests.wsutil import http_json


def test_run_starts_everything_and_sigint_leaves_nothing(services: stack.Supervisor) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSISTANT_")}
    env.update(TEST_ENV, ASSISTANT_REDIS_URL="redis://127.0.0.1:6379/13")
    out = VAR / "run-command.out"
    with open(out, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "corpus_jobs.cli", "run", "--bind", "127.0.0.1:8013",
             "--flower-port", "5566", "--var", str(VAR / "run")],
            cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: b"is running" in out.read_bytes() or proc.poll() is not None,
                        120), out.read_text()
        assert proc.poll() is None, out.read_text()
        text = out.read_text()
        assert "Panel:  http://127.0.0.1:8013/" in text and "Flower: http://127.0.0.1:5566/" in text
        children = psutil.Process(proc.pid).children(recursive=True)
        names = " ".join(" ".join(c.cmdline()) for c in children)
        for part in ("worker", "beat", "flower", "gunicorn"):
            assert part in names, f"{part} not started"
        assert wait_for(lambda: http_json("GET", "http://127.0.0.1:8013/healthz")[0] == 200, 30)
        assert stack.http_ok("http://127.0.0.1:5566/healthcheck")
        for name in ("turns-worker", "beat", "flower", "turns-web"):
            assert (VAR / "run" / "log" / f"{name}.log").exists(), name
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 0, out.read_text()
    time.sleep(0.5)
    alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [c.cmdline() for c in alive]
    assert "Stopped." in out.read_text()
