"""The comparison rules of two runs (``baseline``) and the store of saved runs (``runs``)."""

from __future__ import annotations

import copy
import json
import math
import os

import numpy as np
import pytest

from pytest_t2ibias.errors import CriterionError, RunError
from pytest_t2ibias.reports.rows import ReportRow
from pytest_t2ibias.runs.compare import (
    Figure,
    compare_headers,
    compare_runs,
    figures_of,
    match_checks,
    parse_criterion,
)
from pytest_t2ibias.runs.saved import (
    as_report,
    autosave_name,
    check_name,
    find_run,
    load_report,
    locate,
    rows_of,
    save_run,
)
from pytest_t2ibias.runs.table import render_comparison, verdict_line


def check(nodeid="s.t2i.yaml::gate[nurse-gender]", value=0.1, low=0.0, high=0.2, *,
          check_id="gate", subject="nurse", about="gender", status="passed", figures=None):
    return {"nodeid": nodeid, "check_id": check_id, "kind": "w1_below", "subject": subject,
            "axis": "gender", "about": about, "status": status, "value": value, "low": low,
            "high": high, "n": 100, "figures": figures or {}}


def run_header(candidate="fp-a", **settings):
    return {"models": [{"role": "generator:candidate", "model": "/m/toy-sd", "fingerprint": candidate}],
            "judges": [{"role": "vqa", "model": "/m/clip", "fingerprint": "fp-clip"}],
            "settings": {"confidence": 0.95, "images_per_prompt": None, **settings},
            "git_revision": "abc", "plugin_version": "0.1.0"}


def report(*checks, run=None):
    return {"schema": "pytest-t2ibias report", "version": 2, "run": run or run_header(),
            "checks": list(checks)}


# -- criteria ---------------------------------------------------------------------------------


def test_value_criterion_is_absolute_and_a_figure_at_the_limit_is_within():
    rule = parse_criterion("value:0.05")
    assert not rule.drifted(Figure(0.10), Figure(0.15))
    assert rule.drifted(Figure(0.10), Figure(0.1501))
    assert rule.drifted(Figure(0.10), Figure(0.0499))


def test_percent_criterion_is_relative_to_the_saved_figure():
    rule = parse_criterion("value:10%")
    assert not rule.drifted(Figure(0.50), Figure(0.549))
    assert rule.drifted(Figure(0.50), Figure(0.551))
    assert rule.drifted(Figure(-0.50), Figure(-0.56))
    assert rule.drifted(Figure(0.0), Figure(0.001))  # a saved 0 allows no move


def test_ci_criterion_is_non_overlap_of_the_intervals():
    rule = parse_criterion("ci")
    old = Figure(0.30, 0.20, 0.40)
    assert not rule.drifted(old, Figure(0.55, 0.40, 0.70))  # touching ends overlap
    assert rule.drifted(old, Figure(0.56, 0.41, 0.70))
    assert rule.drifted(old, Figure(0.05, 0.00, 0.19))
    # the point moved outside the saved interval, but the intervals overlap: no drift
    assert not rule.drifted(old, Figure(0.45, 0.35, 0.55))
    # a figure saved without an interval is a point
    assert rule.drifted(Figure(0.3), Figure(0.5, 0.31, 0.6))
    assert not rule.drifted(Figure(0.3), Figure(0.5, 0.29, 0.6))


def test_a_figure_only_one_run_computed_drifts_under_every_criterion():
    for text in ("ci", "value:0.5", "value:50%"):
        rule = parse_criterion(text)
        assert rule.drifted(Figure(0.1, 0.0, 0.2), Figure(None))
        assert rule.drifted(Figure(None), Figure(0.1, 0.0, 0.2))
        assert not rule.drifted(Figure(None), Figure(None))


@pytest.mark.parametrize("text", ["", "cis", "value", "value:", "value:-1", "value:nan",
                                  "value:inf", "mean:0.1", "value:x%"])
def test_nonsense_criteria_are_refused_saying_what_is_accepted(text):
    with pytest.raises(CriterionError, match=r"use ci .* value:X .* value:X%"):
        parse_criterion(text)


def test_ci_rule_rarely_alarms_on_an_unchanged_model_where_the_point_rule_would_often():
    """The docstring's claim, simulated: two independent runs of the same model (shares of
    200 images, Wald 95% intervals) -> non-overlap in well under 2% of figures, while the new
    point leaves the old interval in about one in six."""
    rng = np.random.default_rng(0)
    n, p, z = 200, 0.3, 1.959964
    shares = rng.binomial(n, p, size=(2, 20_000)) / n
    half = z * np.sqrt(shares * (1 - shares) / n)
    low, high = shares - half, shares + half
    rule = parse_criterion("ci")
    alarms = [rule.drifted(Figure(a, la, ha), Figure(b, lb, hb))
              for a, la, ha, b, lb, hb in zip(shares[0], low[0], high[0], shares[1], low[1],
                                              high[1])]
    point_outside = np.mean((shares[1] < low[0]) | (shares[1] > high[0]))
    assert np.mean(alarms) < 0.02
    assert 0.12 < point_outside < 0.22


# -- figures and matching ---------------------------------------------------------------------


def test_a_checks_figures_are_its_value_and_every_named_estimate_but_not_lists():
    row = check(figures={
        "effect": {"age": {"value": -0.4, "low": -0.5, "high": -0.3, "n": 400},
                   "gender": {"value": 0.6, "low": None, "high": None}},
        "matrix": {"value": [[0.1]], "low": [[0.0]], "high": [[0.2]]},  # arrays: not a figure
        "biases": [{"severity": {"value": 0.9, "low": 0.8, "high": 1.0}}],  # positional
        "margin": 0.05, "label": "x"})
    figures = figures_of(row)
    assert set(figures) == {"value", "effect.age", "effect.gender"}
    assert figures["effect.age"] == Figure(-0.4, -0.5, -0.3, 400)
    assert figures["value"] == Figure(0.1, 0.0, 0.2, 100)
    assert figures_of(check(value=None, low=None, high=None))["value"].missing


def test_checks_match_by_nodeid_then_by_check_id_when_the_suite_file_moved():
    old = [check("a.t2i.yaml::gate[nurse-gender]"), check("a.t2i.yaml::x[doctor-age]",
                                                         check_id="x", subject="doctor", about="age")]
    new = [check("moved/a.t2i.yaml::gate[nurse-gender]"), check("a.t2i.yaml::x[doctor-age]",
                                                               check_id="x", subject="doctor", about="age"),
           check("a.t2i.yaml::y[farmer-age]", check_id="y", subject="farmer")]
    pairs, only_old, only_new = match_checks(old, new)
    assert [(o["nodeid"], n["nodeid"]) for o, n in pairs] == [
        ("a.t2i.yaml::x[doctor-age]", "a.t2i.yaml::x[doctor-age]"),
        ("a.t2i.yaml::gate[nurse-gender]", "moved/a.t2i.yaml::gate[nurse-gender]")]
    assert only_old == [] and [c["check_id"] for c in only_new] == ["y"]


def test_one_tests_several_verdicts_with_one_label_match_in_order():
    old = [check("t.py::test_x", 0.1, check_id="test_x"), check("t.py::test_x", 0.2, check_id="test_x")]
    new = [check("t.py::test_x", 0.1, check_id="test_x"), check("t.py::test_x", 0.9, 0.8, 1.0,
                                                                 check_id="test_x")]
    comparison = compare_runs(report(*old), report(*new), [parse_criterion("value:0.1")])
    assert [(c.old.value, c.new.value, bool(c.drifted_by)) for c in comparison.changes] == [
        (0.1, 0.1, False), (0.2, 0.9, True)]


def test_comparison_reports_old_new_delta_and_drift_per_figure_and_new_and_vanished_checks():
    effect = {"effect": {"age": {"value": 0.0, "low": -0.02, "high": 0.02}}}
    moved = {"effect": {"age": {"value": -0.4, "low": -0.5, "high": -0.3}}}
    old = report(check(value=0.0, low=-0.02, high=0.02, figures=effect),
                 check("s::gone[doctor-gender]", check_id="gone", subject="doctor"))
    new = report(check(value=-0.4, low=-0.5, high=-0.3, status="failed", figures=moved),
                 check("s::added[farmer-gender]", check_id="added", subject="farmer"))
    comparison = compare_runs(old, new, [parse_criterion("ci"), parse_criterion("value:0.5")])
    assert [(c.figure, c.delta, c.drifted_by) for c in comparison.changes] == [
        ("value", pytest.approx(-0.4), ("ci",)), ("effect.age", pytest.approx(-0.4), ("ci",))]
    headline = comparison.changes[0]
    assert (headline.old_status, headline.new_status) == ("passed", "failed")
    assert headline.name == "gate[nurse / gender] value"
    assert comparison.new == ["added[farmer / gender]"]
    assert comparison.vanished == ["gone[doctor / gender]"]
    # value:0.5 did not trip (moved by 0.4): the summary names ci alone
    assert comparison.summary() == ("2 figures compared, 2 changed, 2 drifted beyond ci, "
                                    "1 new checks, 1 vanished checks")


def test_an_identical_run_has_nothing_changed_or_drifted():
    saved = report(check(), check("s::b[doctor-age]", 0.3, 0.1, 0.5, check_id="b"))
    comparison = compare_runs(saved, copy.deepcopy(saved), [parse_criterion("ci"),
                                                            parse_criterion("value:0")])
    assert len(comparison.changes) == 2
    assert comparison.changed == [] and comparison.drifted == [] and comparison.header == []


def test_headers_state_a_different_candidate_model_and_settings_that_shape_figures():
    lines = compare_headers(run_header("fp-aaaaaaaaaaaaaaaa"),
                            run_header("fp-bbbbbbbbbbbbbbbb", images_per_prompt=8))
    assert lines[0] == ("generator:candidate: a different candidate model: /m/toy-sd "
                        "(fingerprint fp-aaaaaaaaa) -> /m/toy-sd (fingerprint fp-bbbbbbbbb)")
    assert "setting images_per_prompt: None -> 8" in lines
    judge = run_header()
    judge["judges"][0]["fingerprint"] = "fp-other"
    assert compare_headers(run_header(), judge) == [
        "vqa: a different judge: /m/clip (fingerprint fp-clip) -> /m/clip (fingerprint fp-other)"]


def test_hostile_reports_compare_without_errors():
    odd = check(value="0.3", low=True, high=float("nan"), figures={"x": {"value": "bad", "low": 1,
                                                                         "high": 2}})
    comparison = compare_runs({"checks": [odd, 7]}, {"checks": [check()], "run": []},
                              [parse_criterion("ci")])
    assert [(c.figure, c.old.missing, c.drifted_by) for c in comparison.changes] == [
        ("value", True, ("ci",))]


def test_the_text_names_drifted_figures_and_keeps_user_text_as_characters():
    old = report(check(subject="[bold]nurse\x1b[2J", value=0.0, low=-0.01, high=0.01))
    new = report(check(subject="[bold]nurse\x1b[2J", value=0.5, low=0.4, high=0.6),
                 run=run_header("fp-new"))
    comparison = compare_runs(old, new, [parse_criterion("ci")])
    text = render_comparison(comparison, "main (runs/main.json)", 120, color=False)
    assert "[bold]nurse\\x1b[2J / gender" in text and "\x1b" not in text
    assert "a different candidate model" in text
    assert "0.000 [-0.010, 0.010] -> 0.500 [0.400, 0.600]  +0.500  ci" in text
    line = verdict_line(comparison, "main", "--fail")
    assert line.startswith("compare FAILED: 1 figures drifted from main beyond --fail ci: gate[")
    assert verdict_line(compare_runs(old, old, [parse_criterion("ci")]), "main", "--fail") == (
        "compared with main: no figure drifted (1 figures compared, 0 changed, 0 drifted "
        "beyond ci)")


# -- saved runs -------------------------------------------------------------------------------


def rows(value=0.25):
    return [ReportRow(nodeid="s.t2i.yaml::gate[nurse-gender]", check="w1_below", subject="nurse",
                      axis="gender", value=value, low=value - 0.1, high=value + 0.1, n=50,
                      confidence=0.95, threshold=0.3, figures={"label": "nurse"},
                      check_id="gate", outcome="pass", margin=0.05,
                      gate_confidence=0.95, about="gender", reason=""),
            ReportRow(nodeid="s.t2i.yaml::gate[doctor-gender]", check="w1_below",
                      subject="doctor", axis="gender", value=math.nan, low=math.nan,
                      high=math.nan, n=0, confidence=math.nan, threshold=math.nan,
                      figures={}, check_id="gate", outcome="error",
                      about="gender", reason="BackendError: no")]


def test_a_saved_run_is_the_json_report_and_reads_back_as_the_same_rows(tmp_path):
    path = save_run(tmp_path / "runs", "main", rows(), {"images_generated": 3}, run_header())
    assert path == tmp_path / "runs" / "main.json"
    saved = load_report(path)
    assert saved["work"] == {"images_generated": 3} and saved["run"] == run_header()
    back = rows_of(saved)
    assert back[0] == rows()[0]
    assert back[1].status == "error" and math.isnan(back[1].value) and back[1].reason == "BackendError: no"
    # the run in memory compares as its saved file does
    comparison = compare_runs(saved, as_report(rows(), run_header()), [parse_criterion("value:0")])
    assert comparison.changed == [] and len(comparison.changes) == 2
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["main.json"]  # no temp file left


def test_saved_runs_are_found_by_name_unique_prefix_or_latest(tmp_path):
    for name in ("release-1.0", "release-1.1", "main"):
        save_run(tmp_path, name, rows(), {}, run_header())
    os.utime(tmp_path / "release-1.0.json", (1e9, 1e9))
    os.utime(tmp_path / "main.json", (2e9, 2e9))
    assert find_run(tmp_path, "main").stem == "main"
    assert find_run(tmp_path, "release-1.1").stem == "release-1.1"
    assert find_run(tmp_path, "ma").stem == "main"
    assert find_run(tmp_path, "latest").stem == "main"
    with pytest.raises(RunError, match=r"2 saved runs in .* start with 'release': release-1.0, "
                                       r"release-1.1; give more of the name"):
        find_run(tmp_path, "release")
    with pytest.raises(RunError, match=rf"no saved run named 'v2' \(or starting so\) in "
                                       rf"{tmp_path}; saved: main, release-1.0, release-1.1"):
        find_run(tmp_path, "v2")
    with pytest.raises(RunError, match=r"no saved runs in .*empty .*--t2i-save=NAME"):
        find_run(tmp_path / "empty", "latest")
    assert locate(str(tmp_path / "main.json"), tmp_path / "elsewhere") == tmp_path / "main.json"
    with pytest.raises(RunError, match=r"nope.json: no such file"):
        locate(str(tmp_path / "nope.json"), tmp_path)


def test_autosave_names_count_up_with_revision_and_date(tmp_path):
    run = {"git_revision": "1d171d41f3d20fff9a5e8936a128714eaf73f19b-dirty",
           "date": "2026-11-23T18:25:22+00:00"}
    first = autosave_name(tmp_path, run)
    assert first == "0001_1d171d41f3d2-dirty_20261123T182522Z"
    save_run(tmp_path, first, rows(), {}, run)
    save_run(tmp_path, "0007_x_y", rows(), {}, run)
    assert autosave_name(tmp_path, {}) == "0008_norev_nodateZ"


@pytest.mark.parametrize("name", ["", "latest", "../up", "a/b", ".hidden", "x.json", "a b"])
def test_names_that_cannot_be_a_saved_run_are_refused(name):
    with pytest.raises(RunError, match="a run's name is letters, digits"):
        check_name(name)


@pytest.mark.parametrize("content, message", [
    ("{", r"not valid JSON \(Expecting"),
    ("[]", "not a pytest-t2ibias report"),
    (json.dumps({"schema": "pytest-t2ibias report", "version": 1, "checks": []}),
     "report version 1; this pytest-t2ibias reads version 2"),
    (json.dumps({"schema": "pytest-t2ibias report", "version": 2, "checks": {}}),
     "\"checks\" must be a list of objects"),
    (json.dumps({"schema": "pytest-t2ibias report", "version": 2, "checks": [], "run": 3}),
     "\"run\" must be an object"),
])
def test_reports_that_cannot_be_compared_are_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(RunError, match=rf"^{path}: {message}"):
        load_report(path)
    with pytest.raises(RunError, match="no such file"):
        load_report(tmp_path / "missing.json")
