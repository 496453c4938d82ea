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


def refuse_writes(monkeypatch, code: int, name: str) -> None:
    """``os.write`` fails with ``code`` for files whose name contains ``name`` (the temp file
    beside the report included), as the OS would on a full or read-only disk."""
    real = os.write

    def write(fd, data):
        if name in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def no_temp_files_left(folder: Path) -> None:
    assert [path.name for path in folder.iterdir() if path.name.endswith(".tmp")] == []


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS], ids=["full", "read-only"])
@pytest.mark.parametrize("option, what", [("--t2i-json", "JSON"), ("--t2i-html", "HTML")])
def test_a_report_failing_at_the_end_is_one_error_line_and_a_failed_session(
        pytester: pytest.Pytester, monkeypatch, option, what, code):
    name = f"report.{what.lower()}"
    stale = pytester.path / name
    stale.write_text('{"passed": 12, "failed": 0}')  # the last run's report
    refuse_writes(monkeypatch, code, name)
    result = run(pytester, f"{option}={stale}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"t2ibias: ERROR {option}={stale}: the {what} report could not be written "
        f"({os.strerror(code)}: {stale}); whatever {stale} held before is left as it was, not "
        f"this run's report; free space there or point {option} at a writable file"])
    no_traceback(result)
    # a cleanup removes only the temp file it made: the path's file is the user's (#35)
    assert stale.read_text() == '{"passed": 12, "failed": 0}'
    no_temp_files_left(pytester.path)


@pytest.mark.parametrize("option", ["--t2i-json", "--t2i-html"])
def test_a_report_into_a_full_device_leaves_the_device_node(pytester: pytest.Pytester, option):
    """Was: ``--t2i-html=/dev/full`` as root unlinked the device node, and the next run wrote
    a regular file in its place. Here a node like /dev/full (1, 7) made in a temp dir."""
    import stat

    node = pytester.path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    for _ in range(2):  # the second run finds the node still there
        result = run(pytester, f"{option}={node}")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines([f"t2ibias: ERROR {option}={node}: *could not be written "
                                     f"(No space left on device: {node})*"])
        no_traceback(result)
        assert stat.S_ISCHR(os.lstat(node).st_mode)
    no_temp_files_left(pytester.path)


def test_a_report_replaces_the_last_one_whole(pytester: pytest.Pytester):
    stale = pytester.path / "report.json"
    stale.write_text("the last run's")
    result = run(pytester, f"--t2i-json={stale}")
    assert result.ret == pytest.ExitCode.OK
    assert '"schema": "pytest-t2ibias report"' in stale.read_text()
    no_temp_files_left(pytester.path)


def test_a_run_that_cannot_be_saved_is_one_error_line(pytester: pytest.Pytester, monkeypatch):
    pytester.makepyfile(test_counts="""
from pytest_t2ibias import assert_w1_below

def test_gender():
    assert_w1_below({"male": 50, "female": 50}, 1.0, confidence=0.95, label="gender")
""")
    refuse_writes(monkeypatch, errno.ENOSPC, "mine.json")
    storage = pytester.path / "runs"
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-save=mine",
                                f"--t2i-storage={storage}", "--t2i-bootstrap=200")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"t2ibias: ERROR --t2i-save: cannot save the run in {storage} "
                                 "(No space left on device); point --t2i-storage at a "
                                 "writable directory"])
    no_traceback(result)
