"""A bug put into a real worker, for tests/test_turn_fault_stack.py only: on PYTHONPATH, Python
loads this at start-up. Once worker.pipeline.turn is imported, a question holding
INJECT-PROMPT makes the prompt step raise and one holding INJECT-CHECKS makes the number check
raise; each exception's text is SECRET (it must reach no log and no frame). Any other question
runs as it would without this file."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

SECRET = "injected-words-that-must-not-be-logged-5521"
TARGET = "worker.pipeline.turn"


class InjectedBug(RuntimeError):
    """The exception the injected bug raises."""


def _patch(turn: ModuleType) -> None:
    # The turn imported the checks' runners first: the number check is looked up there.
    checks = sys.modules["worker.pipeline.checks"]
    build_messages, check_numbers = turn.build_messages, checks.check_numbers

    def faulty_build(message: str, *args: Any, **kwargs: Any) -> Any:
        if "INJECT-PROMPT" in message:
            raise InjectedBug(SECRET)
        return build_messages(message, *args, **kwargs)

    def faulty_check(answer: str, grounding: Any, *args: Any, **kwargs: Any) -> Any:
        texts = list(grounding)
        if any("INJECT-CHECKS" in t for t in texts):
            raise InjectedBug(SECRET)
        return check_numbers(answer, texts, *args, **kwargs)

    turn.build_messages, checks.check_numbers = faulty_build, faulty_check


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


sys.meta_path.insert(0, _Finder())
