"""The `become-assistant` command: run, ask, login, projects, corpus, status, token."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from assistant_cli import client, stack
from assistant_cli.answer_view import AnswerPrinter, format_sources, is_quotes
from shared import checks as checks_mod
from shared.auth import mint_access_token
from shared.config import INSECURE_DEV_SECRET, TOKEN, URL_VAR, WEB_BIND, get_settings
from shared.errors import AssistantError, ConfigError

DEFAULT_URL = URL_VAR.get(os.environ)


def _app_token(user: str) -> str:
    token = TOKEN.get(os.environ) or client.load_token()
    if token:
        return token
    settings = get_settings()
    if settings.production or settings.app_jwt_secret != INSECURE_DEV_SECRET:
        raise ConfigError("sign in first with `become-assistant login` (or set ASSISTANT_TOKEN "
                          "to an app access token)")
    return mint_access_token(user, settings.app_jwt_secret)


def cmd_token(args: argparse.Namespace) -> int:
    """Mint a dev app token (dev and test only, with the dev secret)."""
    settings = get_settings()
    if settings.production or settings.app_jwt_secret != INSECURE_DEV_SECRET:
        print("token minting needs the dev profile and the dev secret: it is refused while "
              "ASSISTANT_APP_JWT_SECRET is a real app secret", file=sys.stderr)
        return 2
    print(mint_access_token(args.user, settings.app_jwt_secret, args.ttl))
    return 0


# What runs after each finished step (the event frame reports the step that ended).
_NEXT_PHASE = {"language": "searching the documentation", "translate": "searching the documentation",
               "rewrite": "searching the documentation", "retrieve": "waiting for the model",
               "rerank": "waiting for the model",
               "project": "waiting for the model", "prompt": "waiting for the model"}


class Progress:
    """Says on stderr what the turn is doing until the first word (a ticking line on a terminal,
    one line per step and every 5 s otherwise)."""

    def __init__(self, out: TextIO, project: bool) -> None:
        self.out = out
        self.tty = out.isatty()
        self.project = project
        self.started = time.monotonic()
        self.phase = "connecting"
        self.printed = ""
        self.last_line = 0.0
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._tick, daemon=True)
        self.thread.start()

    def _line(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        return f"{self.phase}…" + (f" {elapsed} s" if elapsed >= 1 else "")

    def _show(self, force: bool = False) -> None:
        with self.lock:
            if self.stopped.is_set():
                return
            line = self._line()
            if self.tty:
                self.out.write("\r\033[K" + line)
            elif force or time.monotonic() - self.last_line >= 5:
                self.out.write(line + "\n")
                self.last_line = time.monotonic()
            self.out.flush()

    def _tick(self) -> None:
        while not self.stopped.wait(1.0):
            self._show()

    def frame(self, frame: dict[str, Any]) -> None:
        """Follow one frame; the first token ends the progress line."""
        kind = frame.get("type")
        phase = None
        if kind == "accepted":
            phase = "searching the documentation"
        elif kind == "event":
            step = str(frame.get("step"))
            phase = ("reading your project" if step == "retrieve" and self.project
                     else _NEXT_PHASE.get(step))
        if phase and phase != self.phase:
            self.phase = phase
            self._show(force=True)
        if kind in ("token", "done", "error"):
            self.stop(first_word=kind == "token")

    def stop(self, first_word: bool = False) -> None:
        """End the progress line (saying when the first word came)."""
        with self.lock:
            if self.stopped.is_set():
                return
            self.stopped.set()
            took = time.monotonic() - self.started
            end = f"first word after {took:.1f} s" if first_word else ""
            if self.tty:
                self.out.write("\r\033[K" + (f"({end})\n" if end else ""))
            elif end:
                self.out.write(end + "\n")
            self.out.flush()


def check_warnings(checks: dict[str, Any]) -> list[str]:
    """What the done frame's checks ask the reader to verify (shared/checks.py words them); a
    check that could not run ({"valid": null, "unavailable": true}) says so, it is neither
    passed nor failed."""
    return checks_mod.warnings(checks)


def weak_warning(sources: list[dict[str, Any]]) -> list[str]:
    """The warning when every source is a weak match (the panel says the same)."""
    if sources and all(s.get("weak") for s in sources):
        return ["the documentation has no close match for this question: the sources below "
                "are weak matches only"]
    return []


def cmd_ask(args: argparse.Namespace) -> int:
    """Ask over ticket + WebSocket, print the answer (streamed on a terminal), then the sources."""
    progress = None if args.quiet else Progress(sys.stderr, bool(args.project))
    printer = AnswerPrinter(sys.stdout)

    def on_frame(frame: dict) -> None:
        if progress:
            progress.frame(frame)
        if frame["type"] == "token":
            printer.token(frame["text"])
        elif frame["type"] == "restart":
            printer.restart()

    try:
        _frames, last = client.ask(args.url, _app_token(args.user), args.question,
                                   on_frame=on_frame, project_id=args.project)
    except client.ClientError as exc:
        printer.failed()
        print(f"\nerror: {_refused(exc.code, str(exc))}", file=sys.stderr)
        return 1
    finally:
        if progress:
            progress.stop()
    if last["type"] == "error":
        printer.failed()
        print(f"error {last['code']}: {_refused(last['code'], last['message'])}",
              file=sys.stderr)
        return 1
    printer.done(last)
    for warning in check_warnings(last.get("checks") or {}) + weak_warning(last.get("sources")
                                                                            or []):
        print(f"warning: {warning}", file=sys.stderr)
    sources = format_sources(last)
    if sources:
        print("\n" + "\n".join(sources))
    if last.get("language_differs") and not is_quotes(last):  # quotes: no model wrote them
        print(f"(the model answered in {language_name(last.get('answer_language'))}, "
              f"the question was in {language_name(last.get('language'))})", file=sys.stderr)
    print(f"\n(index {last.get('index')}, {last.get('timing', {}).get('total_ms')} ms)")
    return 0


LANGUAGES = {"en": "English", "cs": "Czech"}


def language_name(code: Any) -> str:
    """A language code as a word ("cs" -> "Czech"); an unknown one as it came."""
    return LANGUAGES.get(str(code), str(code))


def _refused(code: Any, message: str) -> str:
    """The server's refusal; a 401 also says how to sign in again."""
    if code != 401:
        return message
    if message.rstrip(". ").lower().endswith("sign in again"):
        return message.rstrip(". ") + " with `become-assistant login`."
    return f"{message} Sign in with `become-assistant login`."


def printable(text: str) -> str:
    """Text from the server without control characters (a name cannot move the cursor)."""
    return "".join(ch if ch.isprintable() else " " for ch in str(text))


def _signed_in_token() -> str | None:
    """The app token of a signed-in user (ASSISTANT_TOKEN, else the one `login` saved)."""
    return os.environ.get("ASSISTANT_TOKEN") or client.load_token()


def cmd_projects(args: argparse.Namespace) -> int:
    """List the signed-in user's projects (id and name) for `ask --project ID`."""
    token = _signed_in_token()
    if not token:
        print("error: not signed in: sign in with `become-assistant login` first",
              file=sys.stderr)
        return 1
    try:
        status, body = client.http_json("GET", f"{args.url}/api/v1/assistant/projects",
                                        headers={"Authorization": f"Bearer {token}"})
    except client.ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if status != 200 or not isinstance(body, dict):
        message = ((body or {}).get("error") or {}).get("message") if isinstance(body, dict) \
            else None
        print(f"error {status}: " + _refused(status, message or "the projects could not be "
                                             "read"), file=sys.stderr)
        return 1
    projects = [p for p in body.get("projects") or [] if isinstance(p, dict)]
    if not projects:
        print("You have no projects here (or this assistant reads no BeCoMe app: "
              "see `become-assistant status`).")
        return 0
    width = max(len(printable(p.get("id", ""))) for p in projects)
    for p in projects:
        print(f"{printable(p.get('id', '')):{width}}  {printable(p.get('name', ''))}")
    print("\nAsk about one: become-assistant ask --project ID \"your question\"", file=sys.stderr)
    return 0


def project_id(value: str) -> str:
    """`ask --project`: a project id, never empty (an empty one would ask about no project)."""
    value = value.strip()
    if not value:
        raise argparse.ArgumentTypeError("needs a project id (list yours with "
                                         "`become-assistant projects`)")
    return value


def cmd_corpus_build(args: argparse.Namespace) -> int:
    """Build the index now, under the same lock as scheduled rebuilds."""
    import dataclasses

    from corpus_jobs.build import locked_build
    from corpus_jobs.manifest import load_manifest

    settings = get_settings()
    if args.dsn:
        settings = dataclasses.replace(settings, corpus_dsn=args.dsn)
    try:
        stack.ensure_corpus_database(settings.corpus_dsn, settings.corpus_read_dsn)
        stack.probe_vector(settings.corpus_dsn)
    except stack.StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def progress(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        print(f"\rembedding [{'#' * filled}{'.' * (width - filled)}] {done}/{total}",
              end="", file=sys.stderr, flush=True)

    report = locked_build(settings, load_manifest(args.manifest or settings.corpus_manifest),
                          force=args.force, progress=progress)
    if report is None:
        print("another rebuild is running; nothing done", file=sys.stderr)
        return 3
    print(json.dumps(report.__dict__, indent=2) if args.json else
          f"\nindex {report.version}: {'unchanged (no-op)' if report.no_op else 'built'}; "
          f"{report.documents} documents, {report.passages} passages, "
          f"{report.embedded} embedded, {report.vectors_from_file} vectors from the vectors "
          f"file, {report.seconds:.1f}s\n{captions_line(report)}"
          f"\n{questions_line(report)}")
    return 0


def captions_line(report: Any) -> str:
    """Where the build's captions came from, in the order it looks."""
    c = report.captions
    if not c:
        return "captions: none"
    return (f"captions: {c['file']} passages from the captions file, {c['cache']} from the "
            f"cache, {c['role']} written by the caption role ({report.caption_calls} calls), "
            f"{c['none']} without; {c['changed']} changed since the file was written, "
            f"{c['stale']} file entries unused")


def questions_line(report: Any) -> str:
    """How many question views the build kept, and how many passages lost theirs."""
    q = report.questions
    if not q:
        return "question views: none"
    return (f"question views: {q['questions']} questions of {q['passages']} passages from the "
            f"questions file ({report.questions_embedded} newly embedded); {q['changed']} "
            f"passages changed since the file was written (no questions), {q['stale']} file "
            "entries unused")


def cmd_status(args: argparse.Namespace) -> int:
    """Print /healthz and the BeCoMe app API's health; exit 1 when a component is down."""
    try:
        status, body = client.http_json("GET", f"{args.url}/healthz")
    except client.ClientError as exc:
        print(f"web: down ({exc})")
        return 1
    components = dict((body or {}).get("components") or {})
    # The app the stack itself reads (run sets it for its children), unless one is named here.
    stack_app = components.pop("app_api", None)
    down = False
    for name, comp in components.items():
        down = down or not comp["ok"]
        print(_component_line(name, comp))
    if args.app_url:
        app_ok = _app_status(args.app_url)
    elif isinstance(stack_app, dict):
        print(_component_line("app_api", stack_app))
        app_ok = bool(stack_app.get("ok"))
    else:
        print(f"{'app_api':22} -    not configured (project questions are unavailable)")
        app_ok = True
    return 0 if status == 200 and app_ok and not down else 1


def _component_line(name: str, comp: dict[str, Any]) -> str:
    """One component: name, ok or DOWN, its details; an optional one says what it is for."""
    extra = {k: v for k, v in comp.items() if k not in ("ok", "optional", "without")}
    line = f"{name:22} {'ok ' if comp['ok'] else 'DOWN'} {json.dumps(extra)}"
    if comp.get("optional") and not comp["ok"] and comp.get("without"):
        line += f"  (optional: without it {comp['without']})"
    return line


def _app_status(app_url: str) -> bool:
    """One line on the BeCoMe app API (project questions need it); False only when it is down."""
    if not app_url:
        print(f"{'app_api':22} -    not configured (project questions are unavailable)")
        return True
    try:
        started = time.monotonic()
        code, body = client.http_json("GET", f"{app_url.rstrip('/')}/api/v1/health", timeout=5)
        ms = round((time.monotonic() - started) * 1000, 1)
    except (client.ClientError, ValueError):  # unreachable, or not JSON: not the app
        print(f"{'app_api':22} DOWN {json.dumps({'url': app_url, 'error': 'unreachable'})}")
        return False
    # The app answers exactly {"status": "ok", "version": ...}; anything else is not it, up.
    body = body if isinstance(body, dict) else {}
    ok = code == 200 and body.get("status") == "ok"
    detail = {"url": app_url, "status": code, "ms": ms}
    if isinstance(body.get("version"), str):
        detail["version"] = body["version"][:40]
    print(f"{'app_api':22} {'ok ' if ok else 'DOWN'} {json.dumps(detail)}")
    return ok


def cmd_login(args: argparse.Namespace) -> int:
    """Sign in at the BeCoMe app and keep its token for `ask --project` (0600)."""
    app_url = args.app_url or stack_app_url(args.url)
    if not app_url:
        print("error: no app to sign in to: pass --app-url or set ASSISTANT_APP_API_URL (on "
              f"this machine the assistant at {args.url} names the app it reads, such as the "
              "demo app of `make run`; none was found there)", file=sys.stderr)
        return 2
    if not args.app_url:
        print(f"Signing in at {app_url} (the BeCoMe app the assistant at {args.url} reads).",
              file=sys.stderr)
    email = args.email or input("E-mail: ").strip()
    password = sys.stdin.readline().rstrip("\n") if args.password_stdin \
        else getpass.getpass("Password: ")
    try:
        token = client.app_login(app_url, email, password)
    except client.ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = client.save_token(token)
    print(f"Signed in as {email}; the token is in {path} (readable by you only).")
    return 0


def stack_app_url(url: str) -> str:
    """The app API a running assistant on this machine reads (its /healthz detail), else "".

    Only a loopback assistant naming a loopback app is believed: login sends the password
    there, and a remote server must not be able to choose where it goes."""
    if not _loopback(url):
        return ""
    try:
        _status, body = client.http_json("GET", f"{url.rstrip('/')}/healthz", timeout=5)
    except client.ClientError:
        return ""
    app = ((body or {}).get("components") or {}).get("app_api") if isinstance(body, dict) \
        else None
    found = app.get("url") if isinstance(app, dict) else None
    return found if isinstance(found, str) and _loopback(found) else ""


def _loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlparse

    try:
        host = urlparse(url).hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def cmd_logout(args: argparse.Namespace) -> int:
    """Forget the token that `login` saved."""
    try:
        client.token_path().unlink()
    except FileNotFoundError:
        print("Not signed in.")
        return 0
    print("Signed out.")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Start every process in the foreground (make run)."""
    from assistant_cli.run import Plan, check_bind, choose_manifest, run_forever

    check_bind(get_settings(), args.bind, args.allow_remote)
    # Every child (worker, beat's nightly rebuild, web) reads the manifest from the environment.
    os.environ["ASSISTANT_CORPUS_MANIFEST"] = choose_manifest(args.manifest)
    get_settings.cache_clear()
    return run_forever(get_settings(), Plan(var_dir=Path(args.var).resolve(),
                                            web_bind=args.bind, flower_port=args.flower_port))


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="become-assistant", description=(
        "The BeCoMe assistant: start it, ask it, sign in to ask about your projects, check it."))
    app_url = os.environ.get("ASSISTANT_APP_API_URL", "")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="start everything (services, models, index, worker, beat, "
                                   "Flower, web)")
    r.add_argument("--var", default="var",
                   help="folder for data and logs (default: %(default)s)")
    r.add_argument("--bind", default=WEB_BIND.get(os.environ),
                   help="address of the web server (default: %(default)s)")
    r.add_argument("--allow-remote", action="store_true",
                   help="outside production, allow a --bind that is not loopback")
    r.add_argument("--flower-port", type=int, default=5555,
                   help="port of Flower, the Celery monitor (default: %(default)s)")
    r.add_argument("--manifest", default=None,
                   help="corpus manifest to serve (default: ASSISTANT_CORPUS_MANIFEST, else the "
                        "BeCoMe documentation when at hand, else the assistant's own docs)")
    r.set_defaults(func=cmd_run)
    a = sub.add_parser("ask", help="ask a question and stream the answer")
    a.add_argument("question", help="the question, in English or Czech")
    a.add_argument("--url", default=DEFAULT_URL,
                   help="the assistant's address (default: ASSISTANT_URL, else %(default)s)")
    a.add_argument("--user", default="cli-user",
                   help="user of a dev token when not signed in (dev secret only; "
                        "default: %(default)s)")
    a.add_argument("--project", default=None, metavar="ID", type=project_id,
                   help="ask about this project of yours (sign in first with `login`; "
                        "`become-assistant projects` lists their ids)")
    a.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr while waiting for the first word")
    a.set_defaults(func=cmd_ask)
    c = sub.add_parser("corpus", help="corpus jobs")
    csub = c.add_subparsers(dest="corpus_command", required=True)
    b = csub.add_parser("build", help="build the index (a no-op when nothing changed)")
    b.add_argument("--manifest", default=None,
                   help="corpus manifest (default: ASSISTANT_CORPUS_MANIFEST)")
    b.add_argument("--force", action="store_true", help="rebuild even when nothing changed")
    b.add_argument("--json", action="store_true", help="print the build report as JSON")
    b.add_argument("--dsn", default=None, help="owner DSN (default ASSISTANT_CORPUS_DSN)")
    b.set_defaults(func=cmd_corpus_build)
    from assistant_cli import captions_cli

    captions_cli.add_parser(csub)
    from assistant_cli import vectors_cli

    vectors_cli.add_parser(csub)
    from assistant_cli import retrieval_cli

    e = sub.add_parser("eval", help="evaluation")
    esub = e.add_subparsers(dest="eval_command", required=True)
    er = esub.add_parser("retrieval", help="hit@1/3/5 and MRR on a question file")
    er.add_argument("--questions", required=True, help="the question file")
    er.add_argument("--settings", default="chat",
                    help="chat (what a chat turn runs, the default), a preset name or a TOML "
                         "file; NAME+none / +fewshot / +chat sets the translation of Czech "
                         "questions (default: the chat turn's)")
    er.add_argument("--compare", default=None, help="second settings, compared by bootstrap")
    er.add_argument("--dsn", default=None, help="read DSN of the index to evaluate")
    er.add_argument("--out", default=None, help="write the JSON report here")
    er.add_argument("--translate", action="store_true",
                    help="translate Czech questions with the translation role (default: as a "
                         "chat turn does)")
    er.add_argument("--translate-fewshot", action="store_true",
                    help="translate Czech questions with the few-shot translator (default: as "
                         "a chat turn does)")
    er.set_defaults(func=retrieval_cli.cmd_eval_retrieval)
    # --- eval answers / eval seal: all of it lives in assistant_cli/eval_cli.py ---
    from assistant_cli import eval_cli

    eval_cli.add_parsers(esub, DEFAULT_URL, _app_token)
    # --- end of eval answers / eval seal ---
    s = sub.add_parser("status", help="component health, including the BeCoMe app API")
    s.add_argument("--url", default=DEFAULT_URL,
                   help="the assistant's address (default: ASSISTANT_URL, else %(default)s)")
    s.add_argument("--app-url", default=app_url,
                   help="the BeCoMe app's address (default: ASSISTANT_APP_API_URL)")
    s.set_defaults(func=cmd_status)
    lg = sub.add_parser("login", help="sign in at the BeCoMe app so `ask --project` works")
    lg.add_argument("--app-url", default=app_url,
                    help="the BeCoMe app's address (default: ASSISTANT_APP_API_URL)")
    lg.add_argument("--email", default=None, help="your e-mail (asked when left out)")
    lg.add_argument("--password-stdin", action="store_true",
                    help="read the password from standard input instead of asking")
    lg.set_defaults(func=cmd_login)
    lg.add_argument("--url", default=DEFAULT_URL,
                    help="the assistant whose BeCoMe app to sign in to when no --app-url is "
                         "given (on this machine only; default: ASSISTANT_URL, else "
                         "%(default)s)")
    pj = sub.add_parser("projects", help="list your projects (id and name) for ask --project")
    pj.add_argument("--url", default=DEFAULT_URL,
                    help="the assistant's address (default: ASSISTANT_URL, else %(default)s)")
    pj.set_defaults(func=cmd_projects)
    lo = sub.add_parser("logout", help="forget the token `login` saved")
    lo.set_defaults(func=cmd_logout)
    t = sub.add_parser("token", help="mint a dev app token")
    t.add_argument("--user", required=True, help="the token's subject (user id)")
    t.add_argument("--ttl", type=int, default=900,
                   help="lifetime in seconds (default: %(default)s)")
    t.set_defaults(func=cmd_token)
    from assistant_cli import turn_cli

    turn_cli.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except AssistantError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
