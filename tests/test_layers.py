"""The layers, read from the imports themselves (ast): no service, no import of the code."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PRODUCT = ("web", "worker", "shared", "corpus_jobs", "assistant_cli", "demo_app")
OURS = (*PRODUCT, "bench", "tests")


def imports_between_packages() -> dict[tuple[str, str], set[str]]:
    """(importing package, imported package) -> the importing files, for our packages."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for package in OURS:
        for path in (REPO / package).rglob("*.py"):
            if "node_modules" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top in OURS and top != package:
                        edges[(package, top)].add(str(path.relative_to(REPO)))
    return edges


EDGES = imports_between_packages()
# Every import between our product packages that the README allows, and no other (README,
# "Imports between top-level packages run one way only").
ALLOWED = {
    "shared": set(),
    "corpus_jobs": {"shared"},
    "worker": {"shared", "corpus_jobs"},
    "web": {"shared"},
    "demo_app": {"shared"},
    "assistant_cli": {"shared", "corpus_jobs", "worker", "demo_app"},
}


def test_the_walk_sees_the_imports() -> None:
    # Guards the checks below against passing on an empty graph.
    assert ("web", "shared") in EDGES and ("worker", "shared") in EDGES


def test_shared_imports_none_of_our_other_packages() -> None:
    assert {k: v for k, v in EDGES.items() if k[0] == "shared"} == {}


def test_web_and_worker_never_import_each_other() -> None:
    assert EDGES.get(("web", "worker")) is None, EDGES.get(("web", "worker"))
    assert EDGES.get(("worker", "web")) is None, EDGES.get(("worker", "web"))


def test_no_two_packages_import_each_other() -> None:
    both = sorted((a, b) for (a, b) in EDGES if a < b and (b, a) in EDGES)
    assert both == [], {pair: (EDGES[pair], EDGES[pair[::-1]]) for pair in both}


def test_the_product_never_imports_bench_or_tests() -> None:
    assert {k: v for k, v in EDGES.items() if k[0] in PRODUCT and k[1] in ("bench", "tests")} \
        == {}


def test_each_product_package_imports_only_what_the_readme_allows() -> None:
    """An allow-list, not a list of forbidden pairs: web importing corpus_jobs or demo_app
    importing web fails here although no pair then imports each other."""
    assert set(ALLOWED) == set(PRODUCT)
    extra = {(a, b): files for (a, b), files in EDGES.items()
             if a in PRODUCT and b in PRODUCT and b not in ALLOWED[a]}
    assert extra == {}, extra


def test_no_symlink_is_tracked() -> None:
    """A worktree links .venv and tests/js/node_modules to the shared install; a commit of
    such a link makes every checkout of it replace the real folder by the link."""
    import subprocess

    listing = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.splitlines()
    assert listing, "git lists no file"
    assert [line.split("\t")[1] for line in listing if line.startswith("120000")] == []
