"""Lock files frozen in CI (issue #43), as syrupy's snapshots are: under ``CI=true`` or
``--t2i-frozen-locks`` a missing lock is an error, never written on a runner that throws it
away, unless ``--t2i-update-locks``; entries no check of a whole run read are warned."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from support.counterfactual_world import E2E_SUITE, TOY_LM, WORDS

from pytest_t2ibias._lock_usage import LockUsage
from pytest_t2ibias.locks._file import note_used, unused_entries, used_entries
from pytest_t2ibias.testing import make_tiny_clip, make_tiny_pipeline


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {"model": make_tiny_pipeline(root / "sd", words=WORDS),
            "vqa": make_tiny_clip(root / "clip", words=WORDS)}


@pytest.fixture
def project(pytester, tiny_models, tmp_path):
    pytester.makefile(".t2i.yaml", tiny=E2E_SUITE)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {tiny_models['model']}
        t2i_vqa = {tiny_models['vqa']}
        t2i_llm = {TOY_LM}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 50
        t2i_judge_correction = off
    """))
    return pytester


def test_a_missing_lock_fails_under_ci_unless_asked_to_update(project, monkeypatch):
    lock_file = project.path / "tiny.t2i.lock.json"
    run = lambda *args: project.runpytest("-p", "no:cacheprovider", *args)

    monkeypatch.setenv("CI", "true")
    refused = run()
    refused.assert_outcomes(errors=1)
    refused.stdout.fnmatch_lines([
        "*LockfileError: *tiny.t2i.yaml:9: tiny.t2i.lock.json has no counterfactual prompts for "
        "axis 'age', and lock files are frozen here (--t2i-frozen-locks, or CI=true)*"
        "--t2i-update-locks*"])
    assert not lock_file.exists()

    run("--t2i-update-locks").assert_outcomes(passed=1)
    assert json.loads(lock_file.read_text())["axes"]["age"]["prompts"]["doctor"]
    run().assert_outcomes(passed=1)  # present: a frozen lock is read as ever

    monkeypatch.setenv("CI", "false")
    lock_file.unlink()
    run("--t2i-frozen-locks").assert_outcomes(errors=1)  # the option, without CI
    assert not lock_file.exists()
    run().assert_outcomes(passed=1)  # neither: written, as before
    assert lock_file.exists()


def _bgps_lock(path: Path, gates: list[str]) -> Path:
    path.write_text(json.dumps({"about": "", "lock_version": 1, "suite": "s.t2i.yaml",
                                "gates": {gate: {} for gate in gates}}))
    return path


def test_entries_no_check_read_are_warned_after_a_whole_run(tmp_path):
    lock = _bgps_lock(tmp_path / "s.t2i.bgps.lock.json", ["kept", "renamed-away"])
    usage = LockUsage()  # a fresh session forgets what earlier ones read
    assert used_entries == {}
    note_used(lock, "kept")
    assert unused_entries(used_entries) == {str(lock.resolve()): ["renamed-away"]}

    class Session:
        config = object()
        shouldstop = shouldfail = False

    usage.pytest_sessionfinish(Session(), pytest.ExitCode.OK)
    [line] = usage.lines()
    assert "unused lock entries in " in line and line.split(": ")[2].startswith("renamed-away")

    usage.pytest_deselected([object()])  # -k or -m: unread is not unused
    assert usage.lines() == []


def test_a_worker_s_reads_reach_the_controller(tmp_path):
    lock = _bgps_lock(tmp_path / "s.t2i.bgps.lock.json", ["a", "b"])
    controller = LockUsage()

    class Node:
        workeroutput = {"t2ibias_lock_entries": {"used": {str(lock.resolve()): ["a", "b"]},
                                                 "partial": False}}

    controller.pytest_testnodedown(Node(), None)
    assert controller.lines() == []  # every entry read, by some worker
    Node.workeroutput["t2ibias_lock_entries"]["used"][str(lock.resolve())] = ["a"]
    fresh = LockUsage()
    fresh.pytest_testnodedown(Node(), None)
    assert len(fresh.lines()) == 1 and fresh.lines()[0].endswith("delete them from the file)")


def test_a_missing_openbias_entry_is_not_proposed_when_frozen(tmp_path):
    from types import SimpleNamespace

    from pytest_t2ibias.errors import LockfileError
    from pytest_t2ibias.locks.openbias import locked_proposals, openbias_lock_path

    suite = tmp_path / "s.t2i.yaml"
    frozen = SimpleNamespace(models=SimpleNamespace(settings=SimpleNamespace(
        llm=None, frozen_locks=True)))
    with pytest.raises(LockfileError, match=r"s.t2i.openbias.lock.json has no OpenBias proposals "
                                            r"for 'c/laptop', and lock files are frozen"):
        locked_proposals(frozen, suite, "c/laptop", ["a photo of a laptop"], subject="laptop")
    assert not openbias_lock_path(suite).exists()
    written = locked_proposals(frozen, suite, "c/laptop", ["a photo of a laptop"],
                               subject="laptop", update=True)  # --t2i-update-locks writes
    assert locked_proposals(frozen, suite, "c/laptop", ["a photo of a laptop"],
                            subject="laptop") == written  # present: read as ever
