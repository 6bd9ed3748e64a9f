"""Starting the demo BeCoMe app (demo_app, from a checkout) under the local supervisor."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

from assistant_cli import stack

# In a checkout the demo package sits beside this one; an installed wheel has none.
_CHECKOUT = Path(__file__).resolve().parents[1]


def _demo() -> ModuleType:
    """The demo app module: it lives in the checkout (the wheel does not ship it)."""
    if (_CHECKOUT / "demo_app" / "app.py").is_file() and str(_CHECKOUT) not in sys.path:
        sys.path.append(str(_CHECKOUT))
    try:
        from demo_app import app
    except ImportError as exc:
        raise stack.StackError("the demo BeCoMe app runs from a source checkout only "
                               "(the package does not ship it); set ASSISTANT_APP_API_URL") from exc
    return app


def bootstrap_demo_db(admin_dsn: str) -> str:
    """Create the demo database and its owner role (idempotent); the demo app's DSN."""
    demo = _demo()
    stack.bootstrap_app_db(admin_dsn, demo.DEMO_DB, demo.DEMO_DB)
    return str(demo.demo_dsn(admin_dsn))


def start_demo_app(sup: stack.Supervisor, port: int, dsn: str, env: dict[str, str]) -> str:
    """Start (or reuse) the demo app on 127.0.0.1:port under sup; its base URL once it answers."""
    demo = _demo()
    base = f"http://127.0.0.1:{port}"
    if stack.http_ok(base + demo.HEALTH_PATH):
        return base
    if len(env.get(demo.SECRET_ENV, "")) < demo.MIN_SECRET_LEN:
        raise stack.StackError(
            f"demo app: set {demo.SECRET_ENV} (at least {demo.MIN_SECRET_LEN} chars)")
    if not stack.port_free("127.0.0.1", port):
        raise stack.StackError(f"demo app: port {port} is taken by something else")
    # The secret travels by environment variable name, never on the command line (ps shows it).
    proc = sup.start("demo-app", [sys.executable, "-m", "demo_app.app",
                                  "--port", str(port), "--dsn", dsn, "--secret-env", demo.SECRET_ENV],
                     env=dict(env, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
                         p for p in (str(_CHECKOUT), env.get("PYTHONPATH", "")) if p)))
    # The first start hashes ~70 demo passwords with scrypt: allow it some seconds.
    stack.wait_until(lambda: stack.http_ok(base + demo.HEALTH_PATH), 60, "demo-app", proc)
    return base
