"""Getting started: the demo page names the demo accounts and explains the
five demo projects (the injection test among them) and how long a turn may take, only where a
dev stack signs in to the demo app; the README names only commands that exist."""

from __future__ import annotations

import re
import urllib.request

from assistant_cli.cli import parser
from demo_app.seed import DEMO_PASSWORD, DEMO_USERS, PROJECTS
from tests.conftest import REPO, Stack


def page(stack: Stack) -> str:
    with urllib.request.urlopen(stack.base_url + "/", timeout=10) as resp:  # noqa: S310
        return resp.read().decode()


def test_the_demo_page_names_the_accounts_and_explains_the_projects(project_stack: Stack
                                                                    ) -> None:
    html = " ".join(page(project_stack).split())
    for lang in ("en", "cs"):
        guide = html.split(f'<details class="demo-guide" lang="{lang}">')[1].split("</details>")[0]
        assert all(email in guide for email in DEMO_USERS), lang
        assert DEMO_PASSWORD in guide
        for project in PROJECTS:
            assert project.name.split(". ")[0] in guide, (lang, project.name)
        assert "90" in guide  # how long before the assistant gives up
    assert "security test, not a mistake" in html
    assert "<script>" not in html.split('class="demo-guide"')[1], "named, never embedded"


def test_no_demo_accounts_where_there_is_no_demo_app(scripted_stack: Stack) -> None:
    html = page(scripted_stack)
    assert "demo-guide" not in html and not any(email in html for email in DEMO_USERS)


def test_the_readme_names_only_commands_that_exist() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = set(next(a for a in parser()._actions if a.dest == "command").choices)
    used = set(re.findall(r"(?:bin/|`)become-assistant ([a-z]+)", readme))
    row = next(line for line in readme.splitlines() if line.startswith("| `assistant_cli/`"))
    listed = set(re.findall(r"`([a-z]+)`", row.split("(", 1)[1].split(")", 1)[0]))
    assert used <= commands, used - commands
    assert listed == commands, (listed, commands)
    for email in DEMO_USERS:
        assert email in readme
    assert DEMO_PASSWORD in readme
