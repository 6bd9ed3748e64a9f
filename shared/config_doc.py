"""docs/configuration.md, written from the Settings fields' declarations.

`python -m shared.config_doc` writes it; `--check` exits 1 when the committed file differs
(tests/test_config_doc.py checks the same).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from shared.config import DECLARED, PROCESS_VARS, ROLE_SPECS, Settings
from shared.config_fields import Declared
from shared.generated_doc import write_or_check

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

HEADER = """\
# Configuration

<!-- Written by `python -m shared.config_doc` from the declarations in shared/config.py:
     edit a field's declaration there and run the command, never this file by hand. -->

Read once from the environment into `shared.config.Settings` (`get_settings()`). Profiles:
`dev` (default, a laptop), `test`, and `production`, the hardened profile any real install
uses, local or hosted models alike (`deployed` is its old name and still accepted). Where the
models run is a per-role setting; how hardened the server is, the profile. `production` refuses
to start (one message listing every problem, no secret echoed) with a weak
`ASSISTANT_APP_JWT_SECRET` (under 32 characters, or the dev one; unset, the process verifies no
token, and the web server refuses to start), with `ASSISTANT_DEV_TOKENS` or
`ASSISTANT_DEV_LOGIN` on, without `ASSISTANT_ALLOWED_ORIGINS` (https, or plain http on loopback
only), without `ASSISTANT_TRUSTED_PROXIES` stated (addresses, CIDR blocks or `none`), or with a
hosted role lacking its key or https. It never serves the dev endpoints (`/api/v1/dev/token`,
`/api/v1/dev/login`: 404). gunicorn stops at start with that one sentence, not a traceback.

A number left empty means its default; any value that cannot be read stops the process at
start with a sentence naming the variable.
"""


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def _default(declared: Declared, value: Any) -> str:
    if declared.shown_default is not None:
        return declared.shown_default
    shown = _value(value)
    return f"`{shown}`" if shown else "unset"


def _type(declared: Declared) -> str:
    if declared.choices:
        quoted = [f"`{c}`" for c in declared.choices]
        return ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return declared.kind.label


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The whole of docs/configuration.md."""
    defaults = Settings()
    lines = [HEADER, "## Settings", "",
             "| variable | type | default | meaning |", "|---|---|---|---|"]
    for name, declared in DECLARED.items():
        lines.append(f"| `{declared.env}` | {_cell(_type(declared))} | "
                     f"{_cell(_default(declared, getattr(defaults, name)))} | "
                     f"{_cell(declared.meaning)} |")
    lines += ["", "## Model roles", "",
              "Each role is reached through an OpenAI-compatible server: "
              "`ASSISTANT_<ROLE>_PROVIDER` (`local` or `api`), `_MODEL`, `_BASE_URL` and "
              "`_API_KEY`, its own hosted key (else `ASSISTANT_API_KEY`, below). A hosted "
              "(`api`) role needs a key and, in production, https. An optional role is off "
              "until one of its variables is set.", "",
              "| role | variables | default | meaning |", "|---|---|---|---|"]
    for spec in ROLE_SPECS:
        d = spec.default
        default = "off" if d is None else f"`{d.provider}` / `{d.model}` / `{d.base_url}`"
        lines.append(f"| {spec.name} | `ASSISTANT_{spec.prefix}_*` | {default} | "
                     f"{_cell(spec.meaning)} |")
    lines += ["", "## Read outside Settings", "",
              "| variable | default | read by | meaning |", "|---|---|---|---|"]
    for var in PROCESS_VARS:
        default = f"`{var.default}`" if var.default else "unset"
        lines.append(f"| `{var.env}` | {default} | {var.read_by} | {_cell(var.meaning)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write docs/configuration.md, or with --check say whether it is up to date."""
    return write_or_check(DOC, render, "shared.config_doc", argv)


if __name__ == "__main__":
    sys.exit(main())
