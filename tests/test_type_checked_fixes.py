"""Behaviour the type checker found wrong (issue #42: mypy over the whole package): a value
typed ``X | None`` or ``Path | str`` used as if it were always the first."""

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_t2ibias._session import _error_text


def test_prefetch_command_runs_without_the_terminal_plugin(tmp_path: Path) -> None:
    # get_plugin("terminalreporter") is None under -p no:terminal: its line was written to None
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest_t2ibias", "prefetch", "-p", "no:terminal",
         f"--t2i-cache-dir={tmp_path / 'cache'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "INTERNALERROR" not in run.stdout + run.stderr
    assert run.returncode == 0, run.stdout + run.stderr


def test_an_unexpected_error_in_code_without_a_file_names_its_place() -> None:
    # pytest gives a traceback entry's path as a str when no file holds the code ("<string>")
    with pytest.raises(ZeroDivisionError) as excinfo:
        exec(compile("1 / 0", "<string>", "exec"))  # code without a source file
    assert _error_text(excinfo.value, excinfo) == (
        "unexpected ZeroDivisionError at <string>:1: division by zero")
