"""Read a GGUF file's metadata header (name, architecture, trained context, chat template)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# GGUF value types (ggml's gguf.h): fixed-size scalars by struct code, 8 = string, 9 = array.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """The file is not a readable GGUF model."""


@dataclass(frozen=True)
class GGUFInfo:
    """What the start-up needs from a GGUF's metadata."""

    path: Path
    name: str
    architecture: str
    context_length: int | None
    chat_template: bool

    @property
    def alias(self) -> str:
        """The model name the server answers to: the file's name without .gguf."""
        return self.path.name.removesuffix(".gguf")


def _read(fh: IO[bytes], code: str) -> Any:
    size = struct.calcsize("<" + code)
    data = fh.read(size)
    if len(data) != size:
        raise GGUFError("the file ends inside its metadata")
    return struct.unpack("<" + code, data)[0]


def _string(fh: IO[bytes]) -> str:
    n = _read(fh, "Q")
    if n > 1 << 24:
        raise GGUFError("a metadata string is implausibly long")
    return fh.read(n).decode("utf-8", errors="replace")


def _value(fh: IO[bytes], kind: int, keep: bool) -> Any:
    if kind in _SCALARS:
        return _read(fh, _SCALARS[kind])
    if kind == _STRING:
        if keep:
            return _string(fh)
        fh.seek(_read(fh, "Q"), 1)
        return None
    if kind == _ARRAY:
        item, count = _read(fh, "I"), _read(fh, "Q")
        if item in _SCALARS:
            # Arrays (the tokenizer's vocabulary) are skipped, not read.
            fh.seek(struct.calcsize("<" + _SCALARS[item]) * count, 1)
        else:
            for _ in range(count):
                _value(fh, item, keep=False)
        return None
    raise GGUFError(f"unknown metadata value type {kind}")


def read_metadata(path: Path) -> dict[str, Any]:
    """Every scalar and string of the header by key (arrays are skipped)."""
    out: dict[str, Any] = {}
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"GGUF":
                raise GGUFError(f"{path} is not a GGUF file")
            version = _read(fh, "I")
            count_code = "I" if version == 1 else "Q"
            _read(fh, count_code)  # tensor count
            for _ in range(_read(fh, count_code)):
                key = _string(fh)
                out[key] = _value(fh, _read(fh, "I"), keep=True)
    except OSError as exc:
        raise GGUFError(f"cannot read {path}: {exc.strerror or exc}") from None
    return out


def gguf_info(path: Path) -> GGUFInfo:
    """The name, architecture, trained context and whether it carries a chat template."""
    meta = read_metadata(path)
    arch = str(meta.get("general.architecture") or "")
    ctx = meta.get(f"{arch}.context_length")
    return GGUFInfo(path=path, name=str(meta.get("general.name") or path.stem),
                    architecture=arch, context_length=int(ctx) if ctx else None,
                    chat_template=bool(meta.get("tokenizer.chat_template")))
