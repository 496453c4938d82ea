"""The session plan (issue #42): built once when collection finishes, executed once before
the first item runs; each item's ``Work`` worked out once; the plan's time its own, in no
test case's."""

from __future__ import annotations

import ast
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = "pytester"

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_t2ibias"

CONFTEST = '''
import time
import numpy as np
import pytest
from PIL import Image

import pytest_t2ibias.kinds as kinds

COUNTED = []
_work_of = kinds.work_of


def counting_work_of(item):
    COUNTED.append((item.check.id, item.subject, item.axis.name if item.axis else None))
    return _work_of(item)


# every planner reads an item's work through kinds.work_of (``kinds._base``)
kinds.work_of = counting_work_of


class Painter:
    fingerprint = "painter-v1"

    def generate(self, requests):
        time.sleep(PLAN_SLEEP)  # the plan's images take time: it must not land in a test's
        return [Image.new("RGB", (4, 4), (r.noise_seed % 251, len(r.prompt), 0))
                for r in requests]


class Scorer:
    fingerprint = "scorer-v1"

    def score(self, images, question, choices, statements=None):
        first = np.array([0.6 + image.getpixel((0, 0))[0] / 1000 for image in images])
        return np.stack([first, 1 - first], axis=1)


PLAN_SLEEP = 0.0


@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_generator(config, model, role, options):
    return Painter()


@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_vqa(config, model):
    return Scorer()


def pytest_sessionfinish(session):
    import json, pathlib
    pathlib.Path("counted.json").write_text(json.dumps(COUNTED))
'''

SUITE = """\
suite: tiny
defaults: {images_per_prompt: 3, seed: 0, steps: 2}
judge_correction: off
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age of the person?"
    choices: [young, old]
checks:
  - {id: flat, kind: entropy_below, axes: [gender, age], threshold: 1.0}
  - {id: spill, kind: is_nonnegative, mitigate: [gender], on: [age], tolerance: 1.0}
"""

ITEMS = 6  # flat: 2 subjects x 2 axes; spill: 2 subjects x 1 axis


def _run(pytester: pytest.Pytester, *options: str, sleep: float = 0.0):
    pytester.makeconftest(CONFTEST.replace("PLAN_SLEEP = 0.0", f"PLAN_SLEEP = {sleep}"))
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--t2i-model=m", "--t2i-vqa=v",
        "--t2i-bootstrap=50", f"--t2i-cache-dir={pytester.path / 'cache'}", *options)
    counted = [tuple(entry) for entry in json.loads((pytester.path / "counted.json").read_text())]
    return result, counted


@pytest.mark.parametrize("options", [(), ("--t2i-plan",), ("--t2i-plan", "-v")],
                         ids=["run", "plan", "plan-v"])
def test_each_items_work_is_computed_exactly_once(pytester, options):
    result, counted = _run(pytester, *options)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    assert len(counted) == ITEMS and len(set(counted)) == ITEMS, counted


def test_the_first_testcase_does_not_carry_the_plans_time(pytester):
    result, _ = _run(pytester, "--junitxml=junit.xml", "--t2i-json=report.json", sleep=0.5)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")
                  if p.get("name") == "t2ibias_plan_seconds"}
    plan_seconds = float(properties["t2ibias_plan_seconds"])
    cases = [float(case.get("time")) for case in suite.iter("testcase")]
    assert plan_seconds >= 0.5  # the painter slept in the plan, once a batch
    assert cases[0] < plan_seconds / 2, (cases, plan_seconds)  # not in the first check's time
    header = json.loads((pytester.path / "report.json").read_text())["run"]
    assert header["plan_seconds"] == pytest.approx(plan_seconds, abs=0.01)


def test_the_session_recognises_its_items_by_registration_not_by_probing():
    """No ``hasattr(item``/``getattr(item`` in the session or the plan: items register
    themselves (``SessionPlan.register``)."""
    for name in ("_session.py", "session_plan.py", "items/check.py"):
        tree = ast.parse((PACKAGE / name).read_text())
        probes = [node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("hasattr", "getattr") and node.args
                  and isinstance(node.args[0], ast.Name) and node.args[0].id == "item"]
        assert probes == [], f"{name}: probes an item at lines {probes}"


def test_a_check_item_only_judges():
    """items/check.py under 200 lines, and its runtest reaches no prefetch, adaptive round
    or family decision: the session plan runs them before the first item."""
    source = (PACKAGE / "items" / "check.py").read_text()
    assert len(source.splitlines()) < 200
    for word in ("prefetch", "adaptive_rounds", "decide_family", "sample_adaptively"):
        assert word not in source, word


# -- checks that could not run are ERROR rows, and the run says it is incomplete (#47 item 7) --

BROKEN_SUITE = "suite: broken\nprompt: 'a photo of a {subject}'\nsubjects: [doctor]\nchecks: 3\n"

CRASHING = '''
import os


class Crashing(Painter):
    def generate(self, requests):
        if any("nurse" in r.prompt for r in requests):
            os._exit(3)  # the worker dies, as on a segfault or an OOM kill
        return super().generate(requests)


@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_generator(config, model, role, options):
    return Crashing()
'''


def _report(pytester: pytest.Pytester) -> tuple[dict, dict, str]:
    report = json.loads((pytester.path / "report.json").read_text())
    rows = {row["nodeid"]: row for row in report["checks"]}
    return report["run"], rows, (pytester.path / "report.html").read_text()


def test_a_suite_that_does_not_load_is_an_error_row_and_the_run_incomplete(pytester):
    pytester.makefile(".t2i.yaml", broken=BROKEN_SUITE)
    result, _ = _run(pytester, "--continue-on-collection-errors", "--t2i-json=report.json",
                     "--t2i-html=report.html")
    run, rows, page = _report(pytester)
    assert rows["broken.t2i.yaml"]["status"] == "error", rows.keys()
    assert sum(row["status"] == "passed" for row in rows.values()) == ITEMS
    assert run["complete"] is False and run["interrupted"] is False
    assert any(reason.startswith("broken.t2i.yaml") for reason in run["incomplete_reasons"])
    assert "Incomplete run" in page and "broken.t2i.yaml" in page
    result.stdout.fnmatch_lines(["*broken.t2i.yaml*ERROR*"])  # a row of the terminal table


def test_a_crashed_workers_item_is_an_error_row_and_the_run_incomplete(pytester):
    pytester.makeconftest(CONFTEST + CRASHING)
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--t2i-model=m", "--t2i-vqa=v",
        "--t2i-bootstrap=50", "--t2i-no-cache", "-n", "2", "--max-worker-restart=4",
        "--t2i-json=report.json", "--t2i-html=report.html")
    run, rows, page = _report(pytester)
    crashed = [nodeid for nodeid in rows if "nurse" in nodeid]
    assert crashed and all(rows[nodeid]["status"] == "error" for nodeid in crashed), rows
    assert all("crashed" in rows[nodeid]["reason"] for nodeid in crashed)
    assert run["complete"] is False
    assert "Incomplete run" in page or "Interrupted run" in page


def test_a_whole_run_is_complete(pytester):
    _run(pytester, "--t2i-json=report.json", "--t2i-html=report.html")
    run, _, page = _report(pytester)
    assert run["complete"] is True and run["incomplete_reasons"] == []
    assert "Incomplete run" not in page
