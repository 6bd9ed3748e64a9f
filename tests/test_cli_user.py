"""The CLI as a new user meets it: `status` reads the app the running stack
serves and lists the translator, `projects` lists ids, `login` finds the demo app, bold is
bold on a terminal and plain in a pipe, languages have names, an empty `--project` is an
error, and a refused sign-in names the login command."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from assistant_cli import answer_view
from demo_app.seed import DEMO_PASSWORD, INJECTION_TEXT, OFFICE_MOVE, PROJECTS
from tests.conftest import REPO, Stack, set_script
from tests.test_cli_chat import cli, cli_env
from tests.wsutil import app_token


def without_app_url(env: dict[str, str]) -> dict[str, str]:
    """A shell where the user set nothing: the app's address must come from the stack."""
    return {k: v for k, v in env.items() if k != "ASSISTANT_APP_API_URL"}


def test_status_reads_the_app_the_stack_serves_and_lists_the_translator(
        project_stack: Stack, demo_app: str, tmp_path: Path) -> None:
    env = without_app_url(cli_env(project_stack, tmp_path))
    out = cli(["status", "--url", project_stack.base_url], env)
    lines = out.stdout.splitlines()
    app = next(x for x in lines if x.startswith("app_api"))
    assert " ok " in app and demo_app in app, out.stdout
    assert "not configured" not in out.stdout
    translator = next(x for x in lines if x.startswith("model:translator"))
    assert "gemma-3-270m" in translator, translator
    assert out.returncode == 0, out.stdout + out.stderr


def test_login_without_app_url_finds_the_demo_app(project_stack: Stack, demo_app: str,
                                                 tmp_path: Path) -> None:
    env = without_app_url(cli_env(project_stack, tmp_path))
    ok = cli(["login", "--url", project_stack.base_url, "--email", "alice@example.com",
              "--password-stdin"], env, DEMO_PASSWORD + "\n")
    assert ok.returncode == 0, ok.stderr
    assert f"Signing in at {demo_app}" in ok.stderr
    assert (tmp_path / "become-assistant" / "token").exists()
    # A remote assistant cannot choose where the password goes: no discovery there.
    remote = cli(["login", "--url", "http://192.0.2.1:8000", "--email", "alice@example.com",
                  "--password-stdin"], env, DEMO_PASSWORD + "\n")
    assert remote.returncode == 2 and "--app-url" in remote.stderr


def test_projects_lists_the_signed_in_users_ids_and_names(project_stack: Stack, demo_app: str,
                                                         tmp_path: Path) -> None:
    env = cli_env(project_stack, tmp_path)
    before = cli(["projects", "--url", project_stack.base_url], env)
    assert before.returncode == 1 and "become-assistant login" in before.stderr
    assert cli(["login", "--app-url", demo_app, "--email", "alice@example.com",
                "--password-stdin"], env, DEMO_PASSWORD + "\n").returncode == 0
    out = cli(["projects", "--url", project_stack.base_url], env)
    assert out.returncode == 0, out.stderr
    rows = dict(line.split("  ", 1) for line in out.stdout.splitlines() if line.strip())
    assert {k.strip(): v.strip() for k, v in rows.items()} == {p.id: p.name for p in PROJECTS}
    assert INJECTION_TEXT in out.stdout  # listed as the name it is, nothing more
    assert "ask --project ID" in out.stderr
    bob = cli(["login", "--app-url", demo_app, "--email", "bob@example.com",
               "--password-stdin"], env, DEMO_PASSWORD + "\n")
    assert bob.returncode == 0
    mine = cli(["projects", "--url", project_stack.base_url], env).stdout
    assert OFFICE_MOVE in mine and len(mine.strip().splitlines()) == 2, mine


def test_an_empty_project_is_an_error_not_ignored(tmp_path: Path) -> None:
    out = cli(["ask", "--project", "", "What is the best compromise?"],
              {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)})
    assert out.returncode == 2
    assert "--project: needs a project id" in out.stderr and "projects" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_refused_sign_in_names_the_login_command(project_stack: Stack, tmp_path: Path
                                                  ) -> None:
    # A token the app no longer accepts (signed out, or a dev token it never issued).
    env = {**cli_env(project_stack, tmp_path),
           "ASSISTANT_TOKEN": app_token(project_stack, "signed-out-user")}
    asked = cli(["ask", "--url", project_stack.base_url, "--project", OFFICE_MOVE,
                 "What is the result of my project?"], env)
    assert asked.returncode == 1
    assert "error 401: Please sign in again with `become-assistant login`." in asked.stderr, \
        asked.stderr
    listed = cli(["projects", "--url", project_stack.base_url], env)
    assert listed.returncode == 1 and "become-assistant login" in listed.stderr


def test_languages_are_named_in_words(project_stack: Stack, scripted_llm: str,
                                      tmp_path: Path) -> None:
    env = {**cli_env(project_stack, tmp_path),
           "ASSISTANT_TOKEN": app_token(project_stack, "cli-language")}
    set_script(scripted_llm, ["The best compromise is the mean of the three averages [1]."])
    asked = cli(["ask", "--url", project_stack.base_url, "--quiet",
                 "Jak se počítá nejlepší kompromis podle metody BeCoMe?"], env)
    assert asked.returncode == 0, asked.stderr
    assert "(the model answered in English, the question was in Czech)" in asked.stderr, \
        asked.stderr
    from assistant_cli.cli import language_name

    assert language_name("cs") == "Czech" and language_name("xx") == "xx"


BOLD_ANSWER = ["The **best", " compromise** is", " the mean of the three averages [1]."]


def test_bold_is_plain_in_a_pipe(project_stack: Stack, scripted_llm: str,
                                 tmp_path: Path) -> None:
    env = {**cli_env(project_stack, tmp_path),
           "ASSISTANT_TOKEN": app_token(project_stack, "cli-bold")}
    set_script(scripted_llm, BOLD_ANSWER)
    asked = cli(["ask", "--url", project_stack.base_url, "--quiet",
                 "How is the best compromise computed?"], env)
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.startswith("The best compromise is the mean"), asked.stdout
    assert "**" not in asked.stdout and "\033[" not in asked.stdout


def test_bold_is_bold_on_a_terminal(project_stack: Stack, scripted_llm: str,
                                    tmp_path: Path) -> None:
    env = {**cli_env(project_stack, tmp_path),
           "ASSISTANT_TOKEN": app_token(project_stack, "cli-bold-tty")}
    set_script(scripted_llm, BOLD_ANSWER)
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "assistant_cli.cli", "ask", "--url",
                             project_stack.base_url, "--quiet",
                             "How is the best compromise computed?"],
                            stdout=child, stderr=subprocess.PIPE, env=env, cwd=REPO)
    os.close(child)
    seen = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=30)
    os.close(main)
    text = seen.decode()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    bold, not_bold = "\033[1m", "\033[22m"
    assert f"The {bold}best compromise{not_bold} is the mean" in text, repr(text)
    assert "**" not in text


def test_bold_marks_split_across_tokens() -> None:
    e = answer_view.Emphasis()
    bold, not_bold = answer_view.BOLD, answer_view.NOT_BOLD
    written = ""
    for ch in "a **b c** d *e* 2 ** 3 **f":
        written += e.feed(ch)[0]
    written += e.end()
    assert written == f"a {bold}b c{not_bold} d *e* 2 ** 3 {bold}f{not_bold}"
    assert answer_view.plain_bold("a **b c** d 2 ** 3") == "a b c d 2 ** 3"
