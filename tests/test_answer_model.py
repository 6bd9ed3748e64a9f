"""A capable model one setting away: ASSISTANT_ANSWER_GGUF serves the user's
GGUF through the bundled llama.cpp server for the answer and translation roles, with its chat
format and a context that fits the longest prompt; the banner says what serves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant_cli import stack
from assistant_cli.answer_model import (
    PROJECT_BLOCK_CHARS,
    banner,
    chars_per_token,
    chat_format,
    context_tokens,
    prompt_chars,
    served_model,
)
from assistant_cli.client import ask, http_json
from assistant_cli.gguf import GGUFError, GGUFInfo, gguf_info
from assistant_cli.llama_server import format_gemma_with_system
from assistant_cli.run import Plan, start_services
from shared.config import ConfigError, settings_from_env
from tests.conftest import ALLOC, TEST_ENV, VAR, start_stack
from tests.wsutil import app_token

GGUF_PORT = ALLOC.fixed_port("gguf_server", 8096)  # beside the session's model servers
GGUF_WEB_PORT, GGUF_REDIS = ALLOC.port("gguf stack"), ALLOC.redis_url("gguf stack")


@pytest.fixture(scope="module")
def gemma() -> Path:
    """The translator's GGUF (Gemma 3 270M base), the only other GGUF on this machine."""
    return stack.gemma_gguf()


def gguf_env(gguf: Path) -> dict[str, str]:
    return {"ASSISTANT_ANSWER_GGUF": str(gguf),
            "ASSISTANT_ANSWER_LLM_BASE_URL": f"http://127.0.0.1:{GGUF_PORT}/v1",
            "ASSISTANT_LLM_BASE_URL": f"http://127.0.0.1:{GGUF_PORT}/v1"}


def test_gguf_metadata_is_read_from_the_header(gemma: Path) -> None:
    info = gguf_info(gemma)
    assert (info.architecture, info.context_length, info.chat_template) == ("gemma3", 32768,
                                                                             False)
    assert info.alias == "gemma-3-270m-q4_k_m"
    smol = gguf_info(stack.smollm2_gguf())
    assert (smol.architecture, smol.context_length, smol.chat_template) == ("llama", 8192, True)


def test_a_file_that_is_no_gguf_is_refused_in_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        gguf_info(bad)
    settings = settings_from_env({**TEST_ENV, "ASSISTANT_ANSWER_GGUF": str(tmp_path / "no")})
    with pytest.raises(GGUFError, match="no file at"):
        served_model(settings)


def test_the_gguf_names_the_answer_and_translation_roles(gemma: Path) -> None:
    s = settings_from_env({**TEST_ENV, **gguf_env(gemma)})
    assert s.answer.model == s.translation.model == "gemma-3-270m-q4_k_m"
    assert s.answer.provider == s.translation.provider == "local"
    assert not s.bundled_answer and settings_from_env(TEST_ENV).bundled_answer
    # An explicit translation model keeps its own.
    other = settings_from_env({**TEST_ENV, **gguf_env(gemma), "ASSISTANT_LLM_MODEL": "x"})
    assert other.translation.model == "x"
    with pytest.raises(ConfigError, match="ASSISTANT_ANSWER_GGUF"):
        settings_from_env({**TEST_ENV, **gguf_env(gemma), "ASSISTANT_ANSWER_PROVIDER": "api",
                           "ASSISTANT_API_KEY": "k"})


def test_chat_format_is_the_ggufs_template_or_one_that_keeps_the_system_text() -> None:
    def info(arch: str, template: bool) -> GGUFInfo:
        return GGUFInfo(Path("m.gguf"), "m", arch, 4096, template)

    assert chat_format(info("llama", True))[0] is None
    assert chat_format(info("gemma3", False))[0] == "gemma-with-system"
    assert chat_format(info("qwen2", False))[0] == "chatml"
    assert chat_format(info("gemma3", True), "chatml")[0] == "chatml"
    out = format_gemma_with_system([
        {"role": "system", "content": "Passages: [1] BeCoMe."},
        {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"}])
    assert out.prompt == ("<start_of_turn>user\nPassages: [1] BeCoMe.\n\nQ1<end_of_turn>\n"
                          "<start_of_turn>model\nA1<end_of_turn>\n"
                          "<start_of_turn>user\nQ2<end_of_turn>\n<start_of_turn>model\n")


def test_the_context_holds_the_longest_prompt_in_the_models_own_tokens(gemma: Path) -> None:
    s = settings_from_env(TEST_ENV)
    per = chars_per_token(gemma)
    assert 1.5 < per < 5
    n = context_tokens(s, per, 32768)
    assert n % 1024 == 0 and n >= prompt_chars(s) / per + s.max_output_tokens
    assert context_tokens(s, per, 4096) == 4096, "never beyond the trained context"


def test_the_project_block_bound_holds_for_50_experts_at_their_limits() -> None:
    from web.project.context import build_context

    opinions = [{"user_id": str(i), "user_first_name": "A" * 40, "user_last_name": "B" * 40,
                 "position": "P" * 80, "lower_bound": 123456.789 + i, "peak": 223456.789 + i,
                 "upper_bound": 323456.789 + i} for i in range(60)]
    triangle = {"lower": 123456.78, "peak": 223456.78, "upper": 323456.78,
                "centroid": 223456.78}
    result = {"best_compromise": triangle, "arithmetic_mean": triangle, "median": triangle,
              "max_error": 12345.67, "num_experts": 60, "likert_value": 50,
              "likert_decision": "L" * 40}
    project = {"name": "N" * 120, "description": "D" * 600, "scale_min": 0,
               "scale_max": 1000000, "scale_unit": "U" * 20, "member_count": 60}
    text = build_context(project, opinions, result).text
    assert 10_000 < len(text) <= PROJECT_BLOCK_CHARS


def test_the_banner_says_what_serves_and_what_to_set(gemma: Path) -> None:
    bundled = settings_from_env(TEST_ENV)
    lines = banner(bundled, None, "quotes")
    assert lines[0] == ("Answers: quotes form, the documentation's own words chosen in code "
                        "(the chat model SmolLM2-135M-Instruct (bundled, 135M parameters, "
                        "offline) is not asked)")
    assert "make run ANSWER_GGUF=/path/model.gguf" in lines[1] and "docs/models.md" in lines[1]
    s = settings_from_env({**TEST_ENV, **gguf_env(gemma)})
    served = served_model(s)
    assert served is not None and served.chat_format == "gemma-with-system"
    lines = banner(s, served, "prose")
    assert len(lines) == 1 and lines[0].startswith("Answers: prose form, model "
                                                   "gemma-3-270m-q4_k_m (your GGUF ")
    assert f"context {served.n_ctx} tokens" in lines[0]


@pytest.fixture(scope="module")
def gguf_server(services: stack.Supervisor, gemma: Path) -> Iterator[stack.Supervisor]:
    """`run`'s own start-up with ASSISTANT_ANSWER_GGUF: the GGUF on the answer role's port."""
    sup = stack.Supervisor(VAR / "log" / "gguf")
    try:
        start_services(settings_from_env({**TEST_ENV, **gguf_env(gemma)}), sup,
                       Plan(var_dir=VAR))
        yield sup
    finally:
        sup.stop_all()


def test_answer_gguf_is_served_for_the_answer_role_and_a_turn_reports_it(
        gguf_server: stack.Supervisor, gemma: Path) -> None:
    names = [p.name for p in gguf_server.procs]
    assert names == ["llm-chat"], names  # only the GGUF server was missing
    cmd = " ".join(gguf_server.procs[0].popen.args)  # type: ignore[arg-type]
    assert f"--model {gemma}" in cmd and "--chat_format gemma-with-system" in cmd
    status, models = http_json("GET", f"http://127.0.0.1:{GGUF_PORT}/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == ["gemma-3-270m-q4_k_m"]
    s = start_stack(gguf_server, "gguf", GGUF_WEB_PORT,
                    {**gguf_env(gemma), "ASSISTANT_REDIS_URL": GGUF_REDIS,
                     "ASSISTANT_MAX_OUTPUT_TOKENS": "40"})
    try:
        _, done = ask(s.base_url, app_token(s), "What is BeCoMe?", timeout_s=300)
        assert done["type"] == "done", done
        assert done["usage"]["model"] == "gemma-3-270m-q4_k_m"
        generate = next(st for st in done["timing"]["steps"] if st["step"] == "generate")
        assert generate["model"] == "gemma-3-270m-q4_k_m"
        assert done["answer"].strip()
        assert {"prompt_echo", "repeat"} <= set(done["checks"])
    finally:
        s.sup.stop_all()


def test_a_port_serving_another_model_is_not_reused(gguf_server: stack.Supervisor) -> None:
    with pytest.raises(stack.StackError, match="already serves gemma-3-270m-q4_k_m"):
        stack.start_chat_server(stack.Supervisor(VAR / "log" / "gguf"), GGUF_PORT)


def recipes() -> dict[str, dict[str, str]]:
    """The `export ASSISTANT_...=...` lines of each recipe in docs/models.md."""
    import re

    from tests.conftest import REPO

    text = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    out: dict[str, dict[str, str]] = {}
    for part in re.split(r"^## Recipe \d+: ", text, flags=re.M)[1:]:
        name = part.splitlines()[0]
        out[name] = dict(re.findall(r"^export (ASSISTANT_\w+)=(\S+)", part, re.M))
    return out


def test_every_recipe_in_docs_models_sets_variables_the_settings_read() -> None:
    found = recipes()
    assert len(found) == 4, list(found)
    base = {k: v for k, v in TEST_ENV.items() if "LLM" not in k and "ANSWER" not in k}
    for name, env in found.items():
        if not env:
            continue  # the GGUF recipe passes one variable on the command line
        s = settings_from_env({**base, **env})
        assert s.answer.model == env["ASSISTANT_ANSWER_LLM_MODEL"], name
        assert s.answer.base_url == env["ASSISTANT_ANSWER_LLM_BASE_URL"].rstrip("/"), name
        assert s.answer.provider == env["ASSISTANT_ANSWER_PROVIDER"], name
        assert s.translation.model == env["ASSISTANT_LLM_MODEL"], name
        assert s.translation.base_url == env["ASSISTANT_LLM_BASE_URL"], name
        assert not s.bundled_answer, name
    hosted = settings_from_env({**base, **found["a hosted OpenAI-compatible provider (the "
                                               "reference deployment: OVH AI Endpoints)"]})
    assert hosted.reasoning_effort == "none" and hosted.answer.key_for_request != "local-no-key"
    assert hosted.translates, "a hosted translation role translates Czech questions"
    ollama = settings_from_env({**base, **found["Ollama"]})
    assert ollama.answer.key_for_request == "local-no-key" and ollama.fewshot_translates


def test_make_run_passes_answer_gguf_to_run() -> None:
    import subprocess

    from tests.conftest import REPO

    out = subprocess.run(["make", "-n", "run", "ANSWER_GGUF=/models/m.gguf"], cwd=REPO,
                         capture_output=True, text=True, timeout=60).stdout
    assert 'ASSISTANT_ANSWER_GGUF="/models/m.gguf"' in out and "become-assistant run" in out
    plain = subprocess.run(["make", "-n", "run"], cwd=REPO, capture_output=True, text=True,
                           timeout=60).stdout
    assert "ASSISTANT_ANSWER_GGUF" not in plain
