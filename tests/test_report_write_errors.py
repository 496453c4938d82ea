"""A report that cannot be written (#23): a directory, a read-only place or a full disk is one
paragraph naming the option, the path and the OS's reason, never a traceback from
``pytest_sessionfinish``; a usage error when it can be known before the run."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

pytest_plugins = "pytester"


def run(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    pytester.makepyfile("def test_nothing(): pass")
    return pytester.runpytest("-p", "no:cacheprovider", *options)


def no_traceback(result: pytest.RunResult) -> None:
    for line in result.outlines + result.errlines:
        assert "Traceback" not in line and "INTERNALERROR" not in line, line


@pytest.mark.parametrize("option, what", [("--t2i-json", "JSON"), ("--t2i-html", "HTML")])
def test_a_directory_for_a_report_is_a_usage_error(pytester: pytest.Pytester, option, what):
    result = run(pytester, f"{option}=.")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"*{option}={pytester.path}: the {what} report cannot be written there: "
        f"{pytester.path} is a directory (Is a directory); give a file path in a writable "
        f"directory, e.g. {option}=report.*"])
    no_traceback(result)


def test_a_report_under_a_file_is_a_usage_error(pytester: pytest.Pytester):
    (pytester.path / "notes.txt").write_text("a file, not a folder")
    result = run(pytester, "--t2i-json=notes.txt/out/report.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--t2i-json=*notes.txt/out/report.json: the JSON report "
                                 "cannot be written there: *notes.txt is not a directory "
                                 "(Not a directory)*"])


def test_a_report_in_a_read_only_directory_is_a_usage_error(pytester: pytest.Pytester,
                                                           monkeypatch):
    locked = pytester.path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == locked
                        else real_access(path, mode, **kw))  # as without write permission
    result = run(pytester, f"--t2i-html={locked}/report.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--t2i-html={locked}/report.html: the HTML report cannot "
                                 f"be written there: {locked} cannot be written (*)*"])


def refuse_writes(monkeypatch, name: str, code: int) -> None:
    """Path.write_text fails with ``code`` for files called ``name``, as the OS would."""
    real = Path.write_text

    def write_text(self, *args, **kwargs):
        if self.name == name or (name == "*.tmp" and self.name.endswith(".tmp")):
            raise OSError(code, os.strerror(code), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS], ids=["full", "read-only"])
@pytest.mark.parametrize("option, what", [("--t2i-json", "JSON"), ("--t2i-html", "HTML")])
def test_a_report_failing_at_the_end_is_one_error_line_and_a_failed_session(
        pytester: pytest.Pytester, monkeypatch, option, what, code):
    name = f"report.{what.lower()}"
    stale = pytester.path / name
    stale.write_text('{"passed": 12, "failed": 0}')  # the last run's report
    refuse_writes(monkeypatch, name, code)
    result = run(pytester, f"{option}={stale}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"t2ibias: ERROR {option}={stale}: the {what} report could not be written "
        f"({os.strerror(code)}: {stale}); free space there or point {option} at a writable "
        f"file"])
    no_traceback(result)
    assert not stale.exists()  # never the last run's report read as this one's


def test_a_run_that_cannot_be_saved_is_one_error_line(pytester: pytest.Pytester, monkeypatch):
    pytester.makepyfile(test_counts="""
from pytest_t2ibias import assert_w1_below

def test_gender():
    assert_w1_below({"male": 50, "female": 50}, 1.0, confidence=0.95, label="gender")
""")
    refuse_writes(monkeypatch, "*.tmp", errno.ENOSPC)
    storage = pytester.path / "runs"
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-save=mine",
                                f"--t2i-storage={storage}", "--t2i-bootstrap=200")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"t2ibias: ERROR --t2i-save: cannot save the run in {storage} "
                                 "(No space left on device); point --t2i-storage at a "
                                 "writable directory"])
    no_traceback(result)
