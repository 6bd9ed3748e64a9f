"""llama.cpp's OpenAI-compatible server (llama_cpp.server, same arguments), plus one chat format
for Gemma GGUFs without a chat template.

llama.cpp's own "gemma" format drops the system message, and ours carries the passages: here the
system text goes at the head of the first user turn, as Gemma's own template puts it.
Run: python -m assistant_cli.llama_server --model FILE.gguf --chat_format gemma-with-system ...
"""

from __future__ import annotations

from typing import Any

from llama_cpp import llama_chat_format as formats

_USER, _MODEL, _END = "<start_of_turn>user\n", "<start_of_turn>model\n", "<end_of_turn>\n"


@formats.register_chat_format("gemma-with-system")
def format_gemma_with_system(messages: list[dict[str, Any]],
                             **_kwargs: Any) -> formats.ChatFormatterResponse:
    """Gemma turns; the system messages' text opens the first user turn."""
    system = "\n\n".join(str(m.get("content") or "") for m in messages
                         if m["role"] == "system")
    prompt, pending = "", system
    for m in messages:
        if m["role"] == "system":
            continue
        text = str(m.get("content") or "")
        if m["role"] == "user":
            prompt += _USER + (pending + "\n\n" if pending else "") + text + _END
            pending = ""
        elif m["role"] == "assistant":
            prompt += _MODEL + text + _END
    if pending:  # a system message and no user turn
        prompt += _USER + pending + _END
    return formats.ChatFormatterResponse(prompt=prompt + _MODEL, stop="<end_of_turn>")


def main() -> None:
    """Serve as llama_cpp.server does, with the format above registered."""
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
