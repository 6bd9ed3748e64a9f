"""The CLI as a person uses it: `login` at the BeCoMe app keeps a token only
the user can read, `ask --project` then works and says what it waits for, sources read as plain
text, every option has help, and `status` checks the app API."""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from assistant_cli.cli import check_warnings, parser
from demo_app.app import APP_VERSION
from demo_app.seed import OFFICE_MOVE
from tests.conftest import REPO, Stack, set_script


def cli(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assistant_cli.cli", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def cli_env(stack: Stack, home: Path) -> dict[str, str]:
    env = {**os.environ, **stack.env, "XDG_CONFIG_HOME": str(home)}
    env.pop("ASSISTANT_TOKEN", None)
    return env


def test_every_option_has_help_text() -> None:
    missing = []

    def walk(p: argparse.ArgumentParser, name: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, sp in action.choices.items():
                    walk(sp, f"{name} {sub}")
            elif not action.help and action.dest != "help":
                missing.append(f"{name} {action.option_strings or action.dest}")

    walk(parser(), "become-assistant")
    assert missing == []


def test_login_then_ask_about_a_project_with_progress(
        project_stack: Stack, demo_app: str, scripted_llm: str, tmp_path: Path) -> None:
    env = cli_env(project_stack, tmp_path)
    # A wrong password: a clear sentence, nothing saved.
    bad = cli(["login", "--app-url", demo_app, "--email", "alice@example.com",
               "--password-stdin"], env, "wrong\n")
    assert bad.returncode == 1 and "refused the e-mail or password" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert not (tmp_path / "become-assistant" / "token").exists()
    ok = cli(["login", "--app-url", demo_app, "--email", "alice@example.com",
              "--password-stdin"], env, "demo-password\n")
    assert ok.returncode == 0, ok.stderr
    token = tmp_path / "become-assistant" / "token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(token.parent.stat().st_mode) == 0o700
    assert token.read_text().count(".") == 2, "a JWT"
    assert token.read_text().strip() not in ok.stdout + ok.stderr, "the token is never printed"

    set_script(scripted_llm, ["The best compromise of your project is in its data [1]."],
               stall_s=2.2)
    asked = cli(["ask", "--url", project_stack.base_url, "--project", OFFICE_MOVE,
                 "What is the result of my project?"], env)
    assert asked.returncode == 0, asked.stderr
    assert "The best compromise of your project" in asked.stdout
    progress = asked.stderr.splitlines()
    assert "searching the documentation…" in progress
    assert any(line.startswith("reading your project…") for line in progress)
    assert any(line.startswith("waiting for the model…") for line in progress)
    first = [line for line in progress if line.startswith("first word after ")]
    assert first and 2.0 <= float(first[0].split()[3]) < 30, progress
    # Sources as plain text: no score, no Markdown marks.
    sources = asked.stdout.split("Sources:")[1]
    assert "score" not in sources and "`" not in sources and "#" not in sources.split("\n")[1]

    out = cli(["logout"], env)
    assert out.returncode == 0 and not token.exists()


def test_status_includes_the_app_api(project_stack: Stack, demo_app: str,
                                     tmp_path: Path) -> None:
    env = cli_env(project_stack, tmp_path)
    up = cli(["status", "--url", project_stack.base_url, "--app-url", demo_app], env)
    assert up.returncode == 0, up.stdout + up.stderr
    line = next(x for x in up.stdout.splitlines() if x.startswith("app_api"))
    assert " ok " in line and demo_app in line
    # Read from the app's real health shape, {"status": "ok", "version": ...}.
    assert json.loads(line.split(" ok ", 1)[1])["version"] == APP_VERSION
    down = cli(["status", "--url", project_stack.base_url, "--app-url",
                "http://127.0.0.1:9"], env)
    assert down.returncode == 1
    assert "DOWN" in next(x for x in down.stdout.splitlines() if x.startswith("app_api"))


def test_manifest_source_url_pattern_links_the_section() -> None:
    from corpus_jobs.manifest import source_link_pattern, source_url

    pattern, ref = source_link_pattern("corpus_jobs/manifests/become.toml")
    assert pattern.startswith("https://github.com/caitlon/BeCoMe/blob/") and ref == "main"
    assert source_url(pattern, ref, "docs/user/reading-the-result.md",
                      "Reading the result > ## The `max error` (Δ) > **Agreement**") == \
        "https://github.com/caitlon/BeCoMe/blob/main/docs/user/reading-the-result.md#agreement"
    assert source_url(pattern, ref, "README.md", "BeCoMe") == \
        "https://github.com/caitlon/BeCoMe/blob/main/README.md"
    assert source_link_pattern("corpus_jobs/manifests/default.toml") == ("", "")
    assert source_url("", "main", "README.md", "x") is None


def test_check_warnings_say_when_a_check_could_not_run() -> None:
    """An unavailable check is neither passed nor failed, and never a crash."""
    assert check_warnings({"citations": {"valid": True, "cited": [1], "invalid": []},
                           "numbers": {"valid": True, "unconfirmed": [], "checked": 0}}) == []
    assert check_warnings({"citations": {"valid": False, "cited": [4], "invalid": [4]},
                           "numbers": {"valid": False, "unconfirmed": ["7.5"]}}) == [
        "invalid citations [4]", "numbers not confirmed by the sources: 7.5"]
    assert check_warnings({"citations": {"valid": None, "unavailable": True},
                           "numbers": {"valid": None, "unavailable": True}}) == [
        "the citations check could not run; verify this answer yourself",
        "the numbers check could not run; verify this answer yourself"]


def test_ask_prints_a_quotes_answer_and_i_dont_know_with_sections_to_ask(
        quotes_stack: Stack, tmp_path: Path) -> None:
    """The real worker's quotes form, piped: printed once, as quotations with their sources."""
    import re
    import shlex

    from tests.quotes_frames import OFF_TOPIC
    from tests.wsutil import app_token

    # Signed in (the stack has the default settings: no dev tokens to mint).
    env = {**cli_env(quotes_stack, tmp_path), "ASSISTANT_TOKEN": app_token(quotes_stack, "cli")}
    asked = cli(["ask", "--url", quotes_stack.base_url, "How does the search work?"], env)
    assert asked.returncode == 0, asked.stderr
    answer, sources = asked.stdout.split("\nSources:\n")
    lines = answer.splitlines()
    assert lines[0] == "Here is what the documentation says, in its own words:"
    assert lines[2].startswith("    “"), lines
    captions = [line for line in lines if re.match(r"^    \[\d\] \S", line)]
    assert captions and all("›" in c or c.count("[") == 1 for c in captions), lines
    assert "” [1]" not in answer, "the streamed text is not printed besides the quotes"
    assert re.search(r"^  \[1\] ", sources, re.MULTILINE)
    assert "first word after" in asked.stderr
    off = cli(["ask", "--url", quotes_stack.base_url, OFF_TOPIC], env)
    assert off.returncode == 0, off.stderr
    out = off.stdout.splitlines()
    assert out[0].startswith("I don't know")
    head = out.index("The nearest sections of the documentation (ask about one):")
    commands = [line.strip() for line in out[head:]
                if line.startswith("      become-assistant ask ")]
    assert commands, out
    # A printed command runs as it stands.
    again = cli(shlex.split(commands[0])[1:] + ["--url", quotes_stack.base_url], env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(("Here is what the documentation says", "I don't know"))
