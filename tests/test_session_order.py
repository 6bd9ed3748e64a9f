"""The collection hook of tests/conftest.py: each test's tier from its fixtures, and the tests
marked `last` moved after all others whatever their file is called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import conftest


class FakeItem:
    """As much of a pytest item as the hook reads."""

    def __init__(self, module: str, fixtures: tuple[str, ...] = (), last: bool = False) -> None:
        self.path = Path("tests") / f"{module}.py"
        self.fixturenames = list(fixtures)
        self.markers = {"last"} if last else set()

    def add_marker(self, mark: Any) -> None:
        self.markers.add(mark.name)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def test_tests_marked_last_run_after_all_others_in_their_order() -> None:
    scan_a, scan_b = FakeItem("test_a_scan", last=True), FakeItem("test_a_scan", last=True)
    first, stacked = FakeItem("test_b"), FakeItem("test_z", fixtures=("scripted_stack",))
    items: list[Any] = [scan_a, first, scan_b, stacked]
    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]
    assert items == [first, stacked, scan_a, scan_b]
    assert stacked.markers == {"stack"} and first.markers == set()


def test_the_secrets_scan_is_marked_last() -> None:
    from tests import test_secrets_scan

    assert test_secrets_scan.pytestmark == pytest.mark.last
