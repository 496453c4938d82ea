"""The plugin as a user runs it: a YAML suite and a Python test on tiny random-weight models.

Tiny models give arbitrary images, so these tests assert that verdicts follow the numbers
(value vs threshold), that a warm second run computes nothing, and that xdist agrees.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_t2ibias.testing import make_tiny_clip, make_tiny_pipeline

WORDS = ("a photo of an doctor nurse male female young old person object "
         "working indoors outdoors").split()

SUITE = """\
suite: tiny
defaults: {images_per_prompt: 6, seed: 0, steps: 2}
prompt: "a photo of a {subject}"
subjects: [doctor, nurse]
axes:
  gender:
    question: "What is the gender (male, female) of the person?"
    choices: [male, female]
    statements: {male: "a photo of a male person", female: "a photo of a female person"}
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age (young, old) of the person?"
    choices: [young, old]
    ordered: true
    counterfactuals: {young: "a photo of a young {subject}", old: "a photo of an old {subject}"}
checks:
  - {id: lenient, kind: entropy_below, axes: [gender, age], threshold: 1.0}
  - {id: impossible, kind: w1_below, axes: [gender], threshold: 0.0}
  - {id: spillover, kind: is_nonnegative, mitigate: [gender], on: [age], tolerance: 1.0}
"""

PYTHON_TEST = """\
from pytest_t2ibias import assert_entropy_below, assert_is_nonnegative, assert_w1_below


def test_helpers_on_fixtures(t2i_generator, vqa):
    images = t2i_generator.generate(["a photo of a doctor", "a photo of a nurse"], n=4)
    assert len(images) == 8
    answers = vqa.ask(images, "What is the gender of the person?", ["male", "female"])
    assert sum(answers.counts.values()) + answers.abstentions == 8
    assert_entropy_below(answers, 1.0)
    assert_w1_below(answers, 1.0)


def test_helper_failure_shows_numbers(t2i_generator, vqa):
    images = t2i_generator.generate("a photo of a doctor", n=4)
    answers = vqa.ask(images, "What is the gender of the person?", ["male", "female"])
    assert_w1_below(answers, -0.01)
"""


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "model": make_tiny_pipeline(root / "sd", words=WORDS),
        "vqa": make_tiny_clip(root / "clip", words=WORDS),
    }


@pytest.fixture
def project(pytester: pytest.Pytester, tiny_models, tmp_path) -> pytest.Pytester:
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    pytester.makepyfile(test_helpers=PYTHON_TEST)
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_model = {tiny_models['model']}
        t2i_vqa = {tiny_models['vqa']}
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 200
        # random-weight judges read nothing: every calibration would say "cannot read"
        t2i_judge_correction = off
    """))
    return pytester


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def test_verdicts_follow_the_numbers_and_a_second_run_computes_nothing(project, tmp_path):
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    result = project.runpytest("-p", "no:cacheprovider", f"--t2i-json={report}", f"--t2i-html={page}")
    # 4 lenient + 2 impossible + 2 spillover suite items, 2 python tests
    result.assert_outcomes(passed=7, failed=3)
    result.stdout.fnmatch_lines([
        "*tiny.t2i.yaml:*check 'impossible' (w1_below) for subject 'doctor', axis 'gender' failed*",
        "*normalised W1 of doctor/gender to the ideal*exceeds threshold 0.000*",
        "*t2ibias summary*",
        f"*t2ibias: JSON report written to {report}*",
        f"*t2ibias: HTML report written to {page}*",
    ])
    # pytester's stdout is not a terminal: every row whole on one line, none repeated
    table = result.stdout.str().split("t2ibias: bias checks")[1].split("CI:")[0].splitlines()[2:]
    rows = [line for line in table if line.strip()]
    assert len(rows) == 11 and len(set(rows)) == 11  # "t2ibias: 11 results"
    assert all(line.split()[-1] in ("pass", "FAIL", "limit") for line in rows), rows
    data = _report(report)
    suite_rows = [row for row in data["checks"] if "t2i.yaml" in row["nodeid"]]
    assert len(suite_rows) == 8
    for row in suite_rows:
        assert row["n"] > 0
        assert row["low"] <= row["value"] <= row["high"]
        if row["check"] in ("entropy_below", "w1_below"):
            assert row["passed"] == (row["value"] <= row["threshold"]), row
        else:
            assert row["passed"] == (row["value"] >= row["threshold"]), row
    python_rows = [row for row in data["checks"] if "test_helpers.py" in row["nodeid"]]
    assert {row["check"] for row in python_rows} == {"entropy_below", "w1_below"}
    assert data["work"]["images_generated"] > 0
    # every verdict names the images its judges saw, with their answers (figures.gallery)
    for row in suite_rows + python_rows:
        gallery = row["figures"]["gallery"]
        shown = [image for group in gallery["groups"] for image in group["images"]]
        assert shown and all(len(image["labels"]) == len(gallery["axes"]) for image in shown)
        assert all(group["n"] >= len(group["images"]) for group in gallery["groups"])
    spillover = next(row for row in suite_rows if row["check"] == "is_nonnegative")
    assert spillover["figures"]["gallery"]["axes"] == ["gender", "age"]
    assert {g["prompt"] for g in spillover["figures"]["gallery"]["groups"]} >= {
        "a photo of a male doctor", "a photo of a female doctor"}
    html = page.read_text()
    assert "t2ibias report" in html and "t2ibias: bias checks" not in html
    assert html.count('<table class="heatmap">') == 2  # the two spillover items measured a matrix
    assert html.count('<svg class="thumb') >= 8 and 'class="missing"' not in html  # from the cache

    # A second, identical run is served from the cache: nothing generated, nothing scored.
    second = tmp_path / "second.json"
    project.runpytest("-p", "no:cacheprovider", f"--t2i-json={second}")
    work = _report(second)["work"]
    assert work["images_generated"] == 0 and work["answers_scored"] == 0
    assert work["images_from_cache"] > 0 and work["answers_from_cache"] > 0
    verdicts = lambda path: {r["nodeid"]: (r["passed"], r["value"]) for r in _report(path)["checks"]}
    assert verdicts(report) == verdicts(second)


def test_xdist_workers_share_the_cache_and_agree(project, tmp_path):
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    project.runpytest("-p", "no:cacheprovider", f"--t2i-json={serial}")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                          f"--t2i-json={parallel}", "--t2i-refresh")
    result.assert_outcomes(passed=7, failed=3)
    verdicts = lambda path: {r["nodeid"]: (r["passed"], round(r["value"], 9))
                             for r in _report(path)["checks"]}
    assert verdicts(serial) == verdicts(parallel)
    cache = tmp_path / "cache"
    assert not (cache / "corrupt").exists()
    assert not list(cache.rglob("*.tmp"))
    # Claims: the two workers together generated every image once (--t2i-refresh included).
    unique_images = len(list((cache / "images").rglob("*.png")))
    assert _report(parallel)["work"]["images_generated"] == unique_images


def test_progress_one_line_a_phase_under_q_nothing_under_qq(project, tmp_path):
    quiet = project.runpytest_subprocess("-p", "no:cacheprovider", "-q", "tiny.t2i.yaml")
    # in a log, on pytest's own stream between its lines (never stderr racing its dots, #27)
    quiet.stdout.fnmatch_lines(["t2ibias: generating images · sd: * in *:* (*/s)",
                                "t2ibias: answering '*' · clip: * in *:* (*/s)"])
    assert "t2ibias:" not in quiet.stderr.str()
    assert "to compute" not in quiet.stdout.str()  # -q: the phase's summary only
    silent = project.runpytest_subprocess("-p", "no:cacheprovider", "-qq", "--t2i-refresh",
                                          "tiny.t2i.yaml")
    assert "t2ibias:" not in silent.stderr.str()
    assert silent.ret == quiet.ret


def test_missing_model_is_a_clear_error_naming_the_option(pytester: pytest.Pytester, tmp_path):
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "lenient and doctor and gender",
                                f"--t2i-cache-dir={tmp_path}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*could not run*--t2i-model*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_model_path_that_does_not_exist_names_the_path(pytester: pytest.Pytester, tmp_path):
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    missing = tmp_path / "no-such-model"
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "lenient and doctor and gender",
                                f"--t2i-model={missing}", f"--t2i-cache-dir={tmp_path}")
    # issue #36: refused at startup in one line, before collection and any check
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --t2i-model={missing}: no such folder"])


def test_a_mistyped_model_folder_is_refused_at_startup_with_the_likely_name(pytester):
    (pytester.path / "models" / "toy-sd").mkdir(parents=True)
    pytester.makefile(".t2i.yaml", tiny=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=models/toy-sdd")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([(f"ERROR: --t2i-model={pytester.path / 'models' / 'toy-sdd'}: "
                                  f"no such folder; did you mean {pytester.path / 'models' / 'toy-sd'}?")])
    offline = pytester.runpytest("-p", "no:cacheprovider", "--t2i-model=nobody/none", "--t2i-offline")
    offline.stderr.fnmatch_lines([("ERROR: --t2i-model=nobody/none: no such folder, not a model "
                                   "in the local Hugging Face cache (offline: --t2i-offline), and "
                                   "no pytest_t2ibias_make_* hook makes it")])


def test_a_broken_setting_is_an_error_not_a_fair_model(project, tmp_path):
    """``--t2i-guidance=1e308`` passed validation and made NaN latents: all-black images that
    passed the balance check (issue #23). Now every item that generates is an ERROR naming
    the degenerate output and the setting."""
    report = tmp_path / "report.json"
    result = project.runpytest("-p", "no:cacheprovider", "--t2i-guidance=1e308",
                               f"--t2i-json={report}", "tiny.t2i.yaml")
    result.assert_outcomes(errors=8)
    rows = _report(report)["checks"]
    assert len(rows) == 8 and {row["status"] for row in rows} == {"error"}
    assert all(row["reason"].startswith("DegenerateOutput: ") and "one flat colour" in
               row["reason"] and "guidance 1e+308" in row["reason"] for row in rows), rows[0]
