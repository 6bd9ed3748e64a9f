"""The vectors file shipped next to a manifest: the embeddings role's vectors by content hash,
so a first build on a new machine asks the embedder only for what the file lacks."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from shared.errors import ConfigError

FORMAT = 1
# The build's two caches of vectors, keyed alike (content hash, model key): passages, caption
# and question views in one, the quotes form's spans in the other (corpus_jobs/build.py).
TABLES = ("embedding_cache", "span_vectors")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VectorFile:
    """Vectors of one embeddings model (`model`: the caches' model key, "name|prefix mode"),
    per table by key; `written` and `how` say when and how they were made."""

    model: str
    written: str
    how: str
    rows: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def count(self) -> int:
        """How many vectors the file holds."""
        return sum(len(r) for r in self.rows.values())


def load_vector_file(path: Path) -> VectorFile:
    """Read a vectors file; a malformed one is refused with its path and the reason."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            if header.get("format") != FORMAT:
                raise ValueError(f"format {header.get('format')!r}, not {FORMAT}")
            rows: dict[str, dict[str, np.ndarray]] = {}
            for table in TABLES:
                keys, matrix = data[f"{table}.keys"], data[f"{table}.vectors"]
                if matrix.ndim != 2 or len(keys) != len(matrix):
                    raise ValueError(f"{table}: {len(keys)} keys for a {matrix.shape} matrix")
                rows[table] = {str(k): v.astype(np.float32)
                               for k, v in zip(keys, matrix, strict=True)}
        return VectorFile(str(header["model"]), str(header.get("written", "")),
                          str(header.get("how", "")), rows)
    except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the vectors file {path}: {exc}") from None


def dump_vector_file(path: Path, model: str, written: str, how: str, corpus: str,
                     rows: Mapping[str, Mapping[str, Iterable[float]]]) -> int:
    """Write a vectors file (float16: a cosine moves by about 1e-4); returns the count."""
    header = {"format": FORMAT, "model": model, "corpus": corpus, "written": written,
              "how": how, "dtype": "float16",
              "key": "the build's cache key: sha256 of the embedded text (a passage's index "
                     "text, a caption or question view as corpus_jobs/build.py hashes it, a "
                     "span's embed text); a changed text has another key and is embedded anew"}
    arrays: dict[str, Any] = {"header": np.array(json.dumps(header))}
    for table in TABLES:
        got = rows.get(table, {})
        keys = sorted(got)
        arrays[f"{table}.keys"] = np.array(keys, dtype="U64")
        arrays[f"{table}.vectors"] = (
            np.stack([np.asarray(got[k], dtype=np.float32) for k in keys]).astype(np.float16)
            if keys else np.zeros((0, 0), dtype=np.float16))
    with path.open("wb") as out:
        np.savez_compressed(out, **arrays)
    return sum(len(rows.get(t, {})) for t in TABLES)


class ShippedVectors:
    """A manifest's vectors file as the build reads it: loaded on first need (a no-op build
    never opens it), used only for the model it was made with; counts what it gave."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.used = 0
        self._file: VectorFile | None = None

    def take(self, table: str, model: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The file's vectors of these keys in `table` (none for another model)."""
        wanted = list(keys)
        if self.path is None or not wanted:
            return {}
        if self._file is None:
            self._file = load_vector_file(self.path)
            if self._file.model != model:
                log.warning("the vectors file %s is for %s, not %s: every vector is embedded",
                            self.path.name, self._file.model, model)
        if self._file.model != model:
            return {}
        have = self._file.rows.get(table, {})
        found = {k: have[k] for k in wanted if k in have}
        self.used += len(found)
        return found
