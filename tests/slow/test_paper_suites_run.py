"""Each paper suite (issue #44) run on tiny random-weight SD 1.x / SDXL + CLIP + a chat LM built
offline: every check's row present and none an ERROR (plumbing: tiny models draw noise).
Models and images per prompt come from the options; BGPS' paper-size searches are shrunk in
this process only. InterMit's 26 checks (the paper protocol: at most |B*| steps each) draw
14,088 images and 157,302 answers: 10 min 38 s on 2 idle cores (2026-12-07)."""

from __future__ import annotations

import json

import pytest
from support.paper_suites import PAPER, paper_models, run_paper_suite, shrink_bgps_searches
from support.tiny_models import import_every_class

from pytest_t2ibias.suite.load import load_suite

import_every_class()  # before pytester's in-process runs


@pytest.fixture(scope="module")
def paper_zoo(tmp_path_factory, model_zoo):
    return paper_models(tmp_path_factory, model_zoo)


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "generator"), [("entigen_professions", "sd"),
                                                  ("entigen_professions", "sdxl"),
                                                  ("entigen_objects", "sd"),
                                                  ("entigen_nose_piercing", "sd"),
                                                  ("entigen_weddings", "sd"),
                                                  ("openbias_captions", "sd"),
                                                  ("bgps_occupations", "sd"),
                                                  ("intermit_table1", "sd")])
def test_each_paper_suite_runs_on_tiny_models_with_every_row_and_no_error(
        pytester, paper_zoo, tmp_path, monkeypatch, suite, generator):
    shrink_bgps_searches(monkeypatch)
    result, report = run_paper_suite(pytester, paper_zoo, tmp_path, suite, generator)
    checks = json.loads(report.read_text())["checks"]
    ids = {c["check_id"] for c in checks}
    expected = {c.id for c in load_suite(PAPER / f"{suite}.t2i.yaml").checks}
    assert ids == expected, result.stdout.str()[-3000:]
    errors = [(c["nodeid"], c.get("reason")) for c in checks if c["status"] == "error"]
    assert errors == [], errors[:3]
    if suite == "openbias_captions":  # the paper's setting: its protocol, its own lock
        assert {c["protocol"] for c in checks} == {"paper"}
        assert (pytester.path / "openbias_captions.t2i.openbias.paper.lock.json").exists()
        assert not (pytester.path / "openbias_captions.t2i.openbias.lock.json").exists()
