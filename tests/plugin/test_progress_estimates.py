"""The run's progress total counts the search kinds before they run (``Work.expected``):
each estimate against what the check then really computed, and the log's progress lines
between pytest's own, never inside its line of results (#27)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.intermit_world import FAKE_WORLD, SUITE, FakeWorldPlugin

from pytest_t2ibias._session import session_of
from pytest_t2ibias.kinds import PlannedItem
from pytest_t2ibias.methods.intermit import intermit
from pytest_t2ibias.plan import plan_for
from pytest_t2ibias.reports.progress import planned_work
from pytest_t2ibias.suite.load import load_suite

REPO = Path(__file__).resolve().parents[2]


def fake_world(pytester: pytest.Pytester, *args: str):
    namespace: dict = {}
    exec(FAKE_WORLD, namespace)  # the fake world's hooks, as test_intermit
    plugin = FakeWorldPlugin()
    plugin.pytest_t2ibias_make_generator = namespace["pytest_t2ibias_make_generator"]
    plugin.pytest_t2ibias_make_vqa = namespace["pytest_t2ibias_make_vqa"]
    config = pytester.parseconfigure("--t2i-model=male", "--t2i-vqa=fake", "--t2i-no-cache",
                                     "--t2i-bootstrap=200", "-p", "no:cacheprovider", *args)
    config.pluginmanager.register(plugin, "fake-world")
    return session_of(config).facade


@pytest.mark.parametrize(("epsilon", "steps"), [(0.2, 2), (0.0, 3)])
def test_intermit_estimate_is_within_a_fifth_of_what_it_computes(pytester, tmp_path, epsilon,
                                                                 steps):
    facade = fake_world(pytester)
    path = tmp_path / "fake.t2i.yaml"
    path.write_text(SUITE + f"checks:\n  - {{id: mitigate, kind: intermit, epsilon: {epsilon}}}\n")
    suite = load_suite(path)
    check = suite.checks[0]
    item = PlannedItem(suite, check, "nurse", None, plan_for(facade.settings, suite, check))
    expected = planned_work([item], nodeids=["mitigate"]).expected["mitigate"]

    result = intermit(facade.instrument(suite), suite, "nurse", epsilon=epsilon, tolerance=0.0,
                      confidence=0.95, n_resamples=200)
    assert len(result.steps) == steps
    done = facade.equipment.counters
    # The estimate guesses a step per prioritised axis (3 here): exact when all 3 are taken
    # (48 + 3 x 48 + 2 x 48 + 48 = 336), one step (48 images) over when tau is reached in 2.
    assert expected["images"] == 336
    assert done["images_generated"] == {2: 288, 3: 336}[steps]
    assert done["images_generated"] <= expected["images"] <= 1.2 * done["images_generated"]
    # each image: the three axes and the person filter (the fake world draws many identical
    # pictures, answered once by content, so its answers are no test of the count: the toy
    # models' below are)
    assert expected["answers"] == 4 * expected["images"]


def estimate_and_run(node: str, tmp_path: Path, *args: str) -> tuple[dict, dict, str]:
    """The session's estimate for one item of the example suites (toy models), and what a
    run of it in a fresh cache computed (the summary's work line), and its log."""
    collect = (
        "import json, sys, pytest\n"
        "from pytest_t2ibias.reports.progress import planned_work\n"
        "class Estimate:\n"
        "    def pytest_collection_finish(self, session):\n"
        "        [item] = session.items\n"
        "        work = planned_work([item.as_planned()], nodeids=[item.nodeid])\n"
        "        print('ESTIMATE', json.dumps(work.expected[item.nodeid]))\n"
        "pytest.main(sys.argv[1:], plugins=[Estimate()])\n")
    common = [node, f"--t2i-cache-dir={tmp_path / 'cache'}", "-p", "no:cacheprovider", *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    found = subprocess.run([sys.executable, "-c", collect, "--collect-only", "-q", *common],
                           cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout
    estimate = json.loads(re.search(r"^ESTIMATE (.*)$", found, re.MULTILINE).group(1))
    run = subprocess.run([sys.executable, "-m", "pytest", *common], cwd=REPO, env=env,
                         capture_output=True, text=True, check=False)
    work = re.search(r"^work: (\d+) images generated, \d+ from cache; (\d+) answers scored",
                     run.stdout, re.MULTILINE)
    assert work is not None, run.stdout[-3000:]
    return estimate, {"images": int(work.group(1)), "answers": int(work.group(2))}, run.stdout


@pytest.mark.slow
def test_bgps_estimate_from_its_lock_is_what_it_measures(tmp_path):
    # The lock names the prompts: 10 found, 6 of the λ = 0 baseline (one of them also found),
    # the neutral prompt: 16 distinct.
    estimate, done, _ = estimate_and_run("example_suites/toy_bgps.t2i.yaml::hidden_male",
                                         tmp_path, "--t2i-images-per-prompt=4")
    assert estimate == done == {"images": 16 * 4, "answers": 16 * 4}


@pytest.mark.slow
def test_open_set_estimate_from_its_lock_is_an_upper_bound_within_half_again(tmp_path):
    # The caption's images, asked about each proposed bias, and the judge's audit: 8 images a
    # class with the class written in. (At the suite's 48 images: with a handful the judge
    # answers a bias' few images alike.) A bias the judge answers alike on every image is not
    # audited: the toy CLIP does so for the car's material and style, 5 x 8 images less.
    # The caption's 48 images are the session plan's (open_set names its captions up front);
    # the item's own estimate is what the plan does not name.
    estimate, done, _ = estimate_and_run("example_suites/toy_openset.t2i.yaml::object_biases[car]",
                                         tmp_path)
    assert estimate == {"images": 10 * 8, "answers": 3 * 48 + 10 * 8}
    assert done["images"] <= 48 + estimate["images"] <= 1.5 * done["images"]
    # (their 2 x 48 answers were computed and refused as degenerate: not counted as scored)
    answered = done["answers"] + 2 * 48
    assert answered <= estimate["answers"] <= 1.5 * answered


# -- the log: progress lines between pytest's lines -------------------------------------------

SLOW_WORLD = FAKE_WORLD + '''

import time


class SlowGenerator(FakeWorldGenerator):
    def attributes(self, prompt, index):
        return {**super().attributes(prompt, index), "gender": ("male", "female")[index % 2]}

    def generate(self, requests):
        time.sleep(0.01 * len(requests))  # a line is due at every batch (the interval is 0)
        return super().generate(requests)


@pytest.hookimpl(tryfirst=True)
def pytest_t2ibias_make_generator(config, model, role):
    return SlowGenerator(model)


def pytest_configure(config):
    from pytest_t2ibias.reports import progress

    progress.TerminalProgress.__init__.__kwdefaults__["every_s"] = 0.0
    progress.ReporterLines.__init__.__kwdefaults__["hold_s"] = HOLD_S
'''

LINE_SUITE = """\
suite: lines
defaults: {images_per_prompt: 16, seed: 0}
prompt: "a photo of a {subject}"
subjects: [nurse, doctor, farmer]
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
checks:
  - {id: balance, kind: w1_below, axes: [gender], threshold: 0.5}
  - {id: skew, kind: max_skew_below, axes: [gender], threshold: 0.5,
     images_per_prompt: 32}
  # a search: its work comes mid-file, after results are on pytest's line
  - {id: mitigate, kind: intermit, epsilon: 0.0, images_per_prompt: 64, subjects: [nurse]}
"""


@pytest.mark.parametrize(("verbosity", "hold_s"), [("", 0.0), ("", 3600.0), ("-q", 0.0),
                                                   ("-v", 0.0)])
def test_progress_lines_in_a_log_never_split_a_line_of_pytests(pytester, hold_s, verbosity):
    pytester.makeconftest(SLOW_WORLD.replace("HOLD_S", repr(hold_s)))
    pytester.makefile(".t2i.yaml", a=LINE_SUITE, b=LINE_SUITE.replace("suite: lines",
                                                                     "suite: other"))
    pytester.makepyfile(test_c="def test_plain():\n    pass\n")
    args = ["--t2i-model=slow", "--t2i-vqa=fake", "--t2i-batch-size=8", "-p", "no:cacheprovider",
            f"--t2i-cache-dir={pytester.path / 'cache'}",
            "--t2i-judge-correction=off"]  # the log's lines here; the fake judge reads no class
    result = pytester.runpytest_subprocess(*args, *([verbosity] if verbosity else []))
    result.assert_outcomes(passed=15)
    lines = result.stdout.lines
    progress = [i for i, line in enumerate(lines) if "t2ibias: " in line and "run: " in line
                or "t2ibias: generating" in line or "t2ibias: answering" in line]
    assert progress, "\n".join(lines)
    for i in progress:  # each a line of its own
        assert lines[i].startswith("t2ibias: "), lines[i]
        assert not re.search(r"[.xFs]\s*\[\s*\d+%\]$", lines[i]), lines[i]
    results = re.compile(r"^(?:a|b)\.t2i\.yaml ?([.xFsE]*)(?: +\[ *\d+%\])?$"
                         r"|^test_c\.py ?(\.?)(?: +\[100%\])?$")
    session = lines[:next((i for i, line in enumerate(lines) if "t2ibias summary" in line),
                          len(lines))]
    result_lines = [line for line in session if line.startswith(("a.t2i", "b.t2i", "test_c.py"))]
    if verbosity == "":
        assert all(results.match(line) for line in result_lines), "\n".join(lines)
        assert "" not in lines[lines.index(result_lines[0]):lines.index(result_lines[-1])]
        dots = "".join(results.match(line).group(1) or results.match(line).group(2) or ""
                       for line in result_lines)
        assert dots == "." * 15  # every result written once, under its file's name
        if hold_s:  # held until each file's line ends: no file's results are split
            with_results = [line.split(" ")[0] for line in result_lines
                            if (results.match(line).group(1) or results.match(line).group(2))]
            assert with_results == ["a.t2i.yaml", "b.t2i.yaml", "test_c.py"]
    elif verbosity == "-v":  # a test's line is whole: its id, its word, its percentage
        tests = [line for line in session if "::" in line]
        assert sum("PASSED" in line for line in tests) == 15, "\n".join(lines)
        assert all(re.fullmatch(r"\S+::\S+( PASSED +\[ *\d+%\])?", line.rstrip())
                   for line in tests), "\n".join(lines)
    else:  # -q: the results' lines hold results only
        assert all(set(line.split("[")[0].strip()) <= set(".xFsE") for line in lines
                   if line and line[0] in ".xFsE" and "passed" not in line), "\n".join(lines)
