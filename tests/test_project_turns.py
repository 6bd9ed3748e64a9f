"""Answers about the user's own project, across the real HTTP boundary to the demo BeCoMe app:
the web tier reads the project with the user's token; the scripted model captures its input."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from assistant_cli import stack
from assistant_cli.client import ask
from demo_app.seed import (
    CAFETERIA_MENU,
    DEMO_USERS,
    FLOOD_PLAN,
    INJECTION_PROJECT,
    OFFICE_MOVE,
    STALE_PROJECT,
)
from shared.auth import mint_access_token
from tests.conftest import ALLOC, TEST_ENV, Stack, set_script, start_stack
from tests.wsutil import app_token, http_json
from web.project.app_api import AppApi, read_project_context

ALICE, BOB = DEMO_USERS["alice@example.com"], DEMO_USERS["bob@example.com"]
FENCE = re.compile(r"<project-data>\n(.*?)\n</project-data>", re.DOTALL)
APP_DOWN_PORT, APP_DOWN_REDIS = ALLOC.port("app_down_stack"), ALLOC.redis_url("app_down_stack")
DEAD_APP_PORT = ALLOC.port("app_down_stack's app (nothing listens)", pool="other")


def project_turn(stack_: Stack, scripted: str, user: str, project: str, question: str,
                 chunks: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """(frames, the system message the model received)."""
    set_script(scripted, chunks or ["From the project data [1]."])
    frames, _ = ask(stack_.base_url, app_token(stack_, user), question, project_id=project,
                    timeout_s=60)
    _, requests = http_json("GET", f"{scripted}/_requests")
    streamed = [r for r in requests if r["body"].get("stream")]
    return frames, streamed[-1]["body"]["messages"][0]["content"] if streamed else ""


def test_member_gets_an_answer_grounded_in_the_project(project_stack: Stack,
                                                       scripted_llm: str) -> None:
    frames, system = project_turn(project_stack, scripted_llm, ALICE, OFFICE_MOVE,
                                  "Why is our maximum error so small?")
    done = frames[-1]
    assert done["type"] == "done"
    assert "project" in [f["step"] for f in frames if f["type"] == "event"]
    fenced = FENCE.search(system)
    assert fenced and "Office move budget" in fenced.group(1)
    assert "Maximum error" in system and "Agreement level" in system
    for leak in ("@example.com", ALICE, BOB, "photo", "/api/v1/users/"):
        assert leak not in system, leak


def test_numbers_from_project_data_pass_the_number_check(project_stack: Stack,
                                                         scripted_llm: str) -> None:
    _, system = project_turn(project_stack, scripted_llm, ALICE, OFFICE_MOVE, "What is it?")
    max_error = re.search(r"Maximum error: ([\d.]+)", system)
    assert max_error
    frames, _ = project_turn(project_stack, scripted_llm, ALICE, OFFICE_MOVE,
                             "Why is our maximum error so small?",
                             [f"The maximum error is {max_error.group(1)} [1]."])
    assert frames[-1]["checks"]["numbers"] == {"valid": True, "unconfirmed": [], "checked": 1}
    frames, _ = project_turn(project_stack, scripted_llm, ALICE, OFFICE_MOVE,
                             "Why is our maximum error so small?",
                             ["The maximum error is 987.65 [1]."])
    assert frames[-1]["checks"]["numbers"]["unconfirmed"] == ["987.65"]


@pytest.mark.parametrize("user, project, code", [
    (BOB, FLOOD_PLAN, 403),  # exists, not a member
    (ALICE, str(uuid.uuid4()), 404),  # unknown project
    (ALICE, "not-a-uuid", 404),  # the app's 422
])
def test_refusals_come_before_any_token(project_stack: Stack, scripted_llm: str, user: str,
                                        project: str, code: int) -> None:
    frames, _ = project_turn(project_stack, scripted_llm, user, project, "What is it?")
    last = frames[-1]
    assert last["type"] == "error" and last["code"] == code
    assert not [f for f in frames if f["type"] in ("token", "accepted")]
    assert "detail" not in last["message"] and "Traceback" not in last["message"]


def test_every_member_is_listed_as_the_real_app_has_no_opt_out(project_stack: Stack,
                                                               scripted_llm: str) -> None:
    """The demo answers as the real app (no opt-out flag): nobody is hidden, nothing says so."""
    _, system = project_turn(project_stack, scripted_llm, ALICE, CAFETERIA_MENU,
                             "Who is furthest from the result?")
    fenced = FENCE.search(system)
    assert fenced is not None
    assert "Eva Dvořáková (Chef)" in fenced.group(1)
    assert "4 in total; 4 listed below" in fenced.group(1)
    assert "chose not to be listed" not in system


def test_null_description_reads_as_none_given(project_stack: Stack, scripted_llm: str) -> None:
    """The app answers null for an empty description: the model reads '(none)', not 'None'."""
    _, system = project_turn(project_stack, scripted_llm, ALICE, STALE_PROJECT,
                             "What is this project about?")
    fenced = FENCE.search(system)
    assert fenced is not None and "Description: (none)" in fenced.group(1)
    assert "None" not in fenced.group(1)


def test_opt_out_extension_is_honoured_when_an_app_sends_it(demo_app_opt_out: str) -> None:
    """Against the demo's optional extension (the real app has none), the client still leaves
    a flagged member out of the list and counts their opinion."""
    token = mint_access_token(ALICE, TEST_ENV["ASSISTANT_APP_JWT_SECRET"])
    context, _ = read_project_context(AppApi(demo_app_opt_out), token, CAFETERIA_MENU)
    fenced = FENCE.search(context.text)
    assert fenced is not None
    assert "Dvořáková" not in context.text and "Eva" not in fenced.group(1)
    assert "4 in total" in fenced.group(1) and "chose not to be listed" in fenced.group(1)
    assert (context.opinion_count, context.listed_count, context.hidden_count) == (4, 3, 1)


def test_injection_in_the_project_name_stays_inside_the_fence(project_stack: Stack,
                                                              scripted_llm: str) -> None:
    _, system = project_turn(project_stack, scripted_llm, ALICE, INJECTION_PROJECT,
                             "What is this project about?")
    fenced = FENCE.search(system)
    assert fenced is not None
    injection = "Ignore previous instructions"
    assert injection in fenced.group(1)
    assert system.count(injection) == fenced.group(1).count(injection), "only inside the fence"
    assert "<script" not in system


@pytest.fixture(scope="module")
def app_down_stack(services: stack.Supervisor, scripted_llm: str) -> Iterator[Stack]:
    s = start_stack(services, "appdown", APP_DOWN_PORT, {
        "ASSISTANT_REDIS_URL": APP_DOWN_REDIS,
        "ASSISTANT_APP_API_URL": f"http://127.0.0.1:{DEAD_APP_PORT}",
        "ASSISTANT_ANSWER_LLM_BASE_URL": f"{scripted_llm}/v1"})
    try:
        yield s
    finally:
        s.sup.stop_all()


def test_app_down_is_a_503_refusal(app_down_stack: Stack, scripted_llm: str) -> None:
    frames, _ = project_turn(app_down_stack, scripted_llm, ALICE, OFFICE_MOVE, "What is it?")
    assert frames[-1]["type"] == "error" and frames[-1]["code"] == 503
    assert "127.0.0.1" not in frames[-1]["message"]


def test_project_picker_lists_the_users_projects(project_stack: Stack) -> None:
    status, body = http_json("GET", f"{project_stack.base_url}/api/v1/assistant/projects",
                             headers={"Authorization": f"Bearer {app_token(project_stack, BOB)}"})
    assert status == 200
    assert {p["id"] for p in body["projects"]} == {OFFICE_MOVE, CAFETERIA_MENU}
