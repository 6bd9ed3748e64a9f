"""`eval retrieval --out`: a report path in a folder that does not exist yet is made before the
run; one that cannot be written fails at once with a plain message."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant_cli.retrieval_cli import report_path
from shared.errors import ConfigError


def test_a_new_folder_is_made_and_a_bad_path_fails_before_the_run(tmp_path: Path) -> None:
    path = report_path(str(tmp_path / "eval" / "fresh" / "report.json"))
    assert path is not None and path.parent.is_dir()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ConfigError, match="cannot make its folder"):
        report_path(str(tmp_path / "a-file" / "report.json"))
    with pytest.raises(ConfigError, match="is a folder"):
        report_path(str(tmp_path))
    assert report_path(None) is None
