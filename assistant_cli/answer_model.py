"""The answer model `run` serves: the bundled SmolLM2, or the user's own GGUF with its chat
format and a context that holds the longest prompt the settings allow."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from assistant_cli.gguf import GGUFError, GGUFInfo, gguf_info
from shared.config import Settings
from shared.history import HISTORY_CHARS

# The longest answer prompt, in characters: the instructions and pinned facts (worker/prompts,
# ~2,600), a project block of 50 listed experts with names, positions and figures at their
# limits (web/project/context.py, ~14,600; tests/test_answer_model.py builds one), and per
# passage its text (cut at ~800 by the chunker) with its heading line.
INSTRUCTION_CHARS = 3_000
PROJECT_BLOCK_CHARS = 15_000
PASSAGE_CHARS = 1_000
CONTEXT_STEP = 1024
# The bundled server's context: SmolLM2's own trained maximum.
BUNDLED_CONTEXT = 8192
# A sample as hard to tokenize as the prompt gets (Czech text, long numbers, names): the
# model's own tokenizer gives its characters per token, so the context is counted in its
# tokens, not guessed.
_SAMPLE = ("Proč je maximální chyba v našem projektu tak malá, když se experti neshodují? "
           "Expert 12: Anna Nováková-Dvořáková (vedoucí oddělení) — lower 123456.79, "
           "peak 223457.79, upper 323458.79, centroid 223457.79. Nejlepší kompromis "
           "vychází z aritmetického průměru a mediánu; the best compromise is their midpoint. ")
# Architectures whose GGUFs may lack a template, and llama.cpp's format for them ("gemma" is
# registered by assistant_cli.llama_server: llama.cpp's own drops the system message).
_FORMAT_BY_ARCH = {"gemma": "gemma-with-system", "gemma2": "gemma-with-system",
                   "gemma3": "gemma-with-system", "qwen2": "chatml", "qwen3": "chatml",
                   "qwen3moe": "chatml", "llama": "llama-3", "mistral": "mistral-instruct",
                   "phi3": "chatml"}


@dataclass(frozen=True)
class ServedModel:
    """The GGUF the answer server loads, under which name, with which format and context."""

    path: Path
    alias: str
    chat_format: str | None  # None: the template in the GGUF
    n_ctx: int
    trained_context: int | None
    note: str = ""


def prompt_chars(settings: Settings) -> int:
    """The longest answer prompt the settings allow, in characters."""
    return (INSTRUCTION_CHARS + PROJECT_BLOCK_CHARS + settings.top_k * PASSAGE_CHARS
            + HISTORY_CHARS + settings.max_message_chars)


def chars_per_token(path: Path) -> float:
    """Characters per token of the model's own tokenizer on the sample (vocabulary only)."""
    from llama_cpp import Llama

    # llama.cpp's C code writes a context warning to fd 2 even with verbose off: not for the
    # banner's reader.
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    text = _SAMPLE * 8
    return len(text) / max(1, len(vocab.tokenize(text.encode("utf-8"), add_bos=False)))


def context_tokens(settings: Settings, per_token: float, trained: int | None) -> int:
    """Tokens for the longest prompt plus the output cap, rounded up, within the model's
    trained context."""
    need = math.ceil(prompt_chars(settings) / per_token) + settings.max_output_tokens
    need = CONTEXT_STEP * math.ceil(need / CONTEXT_STEP)
    return min(need, trained) if trained else need


def chat_format(info: GGUFInfo, wanted: str = "") -> tuple[str | None, str]:
    """(format to pass llama.cpp or None for the GGUF's template, a note for the banner)."""
    if wanted:
        return wanted, f"chat format {wanted} (ASSISTANT_ANSWER_CHAT_FORMAT)"
    if info.chat_template:
        return None, "chat template from the GGUF"
    fmt = _FORMAT_BY_ARCH.get(info.architecture, "chatml")
    return fmt, (f"the GGUF has no chat template: chat format {fmt} for {info.architecture or 'an unknown architecture'}"
                 "; set ASSISTANT_ANSWER_CHAT_FORMAT if the model uses another")


@lru_cache(maxsize=4)
def served_model(settings: Settings) -> ServedModel | None:
    """The user's GGUF as the answer server will serve it; None without ASSISTANT_ANSWER_GGUF.

    Raises GGUFError when the file is missing or not a GGUF.
    """
    if not settings.answer_gguf:
        return None
    path = Path(settings.answer_gguf).expanduser()
    if not path.is_file():
        raise GGUFError(f"ASSISTANT_ANSWER_GGUF: no file at {path}")
    info = gguf_info(path)
    fmt, note = chat_format(info, settings.answer_chat_format)
    n_ctx = context_tokens(settings, chars_per_token(path), info.context_length)
    if info.context_length and n_ctx >= info.context_length:
        note += (f"; context {n_ctx} tokens, the model's maximum: a turn with a long project "
                 "block and history may not fit")
    return ServedModel(path.resolve(), settings.answer.model, fmt, n_ctx, info.context_length,
                       note)


def banner(settings: Settings, served: ServedModel | None, form: str) -> list[str]:
    """What `run` says about the answers: form, model and what would make them better."""
    a = settings.answer
    if served is not None:
        model = (f"{served.alias} (your GGUF {served.path}, context {served.n_ctx} tokens, "
                 f"{served.note})")
    elif settings.bundled_answer:
        model = f"{a.model} (bundled, 135M parameters, offline)"
    else:
        model = f"{a.model} ({'hosted at ' if a.provider == 'api' else 'local server at '}"\
                f"{a.base_url})"
    if form == "quotes":
        # No chat model writes these: say so, so nobody takes the quotes for the model's prose.
        lines = ["Answers: quotes form, the documentation's own words chosen in code (the "
                 f"chat model {model} is not asked)"]
    else:
        lines = [f"Answers: {form} form, model {model}"]
    if settings.bundled_answer:
        lines.append("  For better answers: make run ANSWER_GGUF=/path/model.gguf (a local GGUF), "
                     "or a hosted or Ollama/vLLM model (ASSISTANT_ANSWER_PROVIDER, "
                     "ASSISTANT_ANSWER_LLM_MODEL, ASSISTANT_ANSWER_LLM_BASE_URL); see "
                     "docs/models.md")
    return lines
