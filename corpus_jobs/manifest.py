"""Corpus manifests: which files form the index, where they live, and their language."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from shared.errors import ConfigError


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest; `root` is absolute."""

    name: str
    path: Path
    root: Path
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    language: str

    def files(self) -> list[Path]:
        """Every included, non-excluded file, sorted by relative path."""
        found: set[Path] = set()
        for pattern in self.include:
            found.update(p for p in self.root.glob(pattern) if p.is_file())
        excluded = {p for pattern in self.exclude for p in self.root.glob(pattern)}
        return sorted(found - excluded, key=lambda p: p.relative_to(self.root).as_posix())


def load_manifest(path: str | Path, base: Path | None = None) -> Manifest:
    """Read a manifest file; a relative path is taken from the repository root."""
    p = Path(path)
    if not p.is_absolute():
        p = (base or Path(__file__).resolve().parent.parent) / p
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read corpus manifest {p}: {exc}") from exc
    root = (p.parent / data.get("root", ".")).resolve()
    if not root.is_dir():
        raise ConfigError(f"corpus root {root} does not exist")
    return Manifest(
        name=str(data.get("name", p.stem)),
        path=p,
        root=root,
        include=tuple(data.get("include", ["**/*.md"])),
        exclude=tuple(data.get("exclude", [])),
        language=str(data.get("language", "en")),
    )
