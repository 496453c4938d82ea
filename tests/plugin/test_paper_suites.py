"""The papers' own suites (issue #44): ENTIGEN's profession benchmark, InterMit's Table 1 and
BGPS' experiments. Their data is the papers' own, and ``--t2i-plan`` prints each suite's images
on tiny random-weight models (models and images per prompt from the options, the suites not
edited); tests/slow/test_paper_suites_run.py runs them."""

from __future__ import annotations

import csv
import re

import pytest
from support.paper_suites import PAPER, SUITES, paper_models, run_paper_suite
from support.tiny_models import import_every_class

from pytest_t2ibias.suite.load import load_suite

import_every_class()  # before pytester's in-process runs


@pytest.fixture(scope="module")
def paper_zoo(tmp_path_factory, model_zoo):
    return paper_models(tmp_path_factory, model_zoo)


def test_entigen_suite_writes_exactly_the_benchmarks_profession_prompts():
    """The 175 profession rows of the authors' prompt.csv, no more, no fewer (the kind appends
    each phrase, {subject} filled in, to the subject's prompt)."""
    suite = load_suite(PAPER / "entigen_professions.t2i.yaml")
    with open(PAPER / "data" / "entigen" / "prompt.csv", newline="") as f:
        published = {row["Sentence"] for row in csv.DictReader(f) if row["Category"] == "profession"}
    ours = set()
    for subject in suite.subjects:
        prompt = suite.prompt_for(subject)
        ours.add(prompt)
        for check in suite.checks:
            for phrase in [*check.params.interventions, *(check.params.controls or ())]:
                ours.add(f"{prompt} {phrase.replace('{subject}', subject)}")
    assert len(published) == 175 and ours == published
    assert (PAPER / "data" / "entigen" / "LICENSE").read_text().startswith("MIT License")


ENTIGEN_SUITES = ("entigen_professions", "entigen_objects", "entigen_nose_piercing",
                  "entigen_weddings")


def test_entigen_suites_write_exactly_the_benchmarks_246_prompts():
    """Professions, the 8 objects (7 worn, the nose piercing in its own file: another verb)
    and the 3 wedding scenarios: every row of the authors' prompt.csv, word for word."""
    with open(PAPER / "data" / "entigen" / "prompt.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    ours = set()
    for name in ENTIGEN_SUITES:
        suite = load_suite(PAPER / f"{name}.t2i.yaml")
        for subject in suite.subjects:
            prompt = suite.prompt_for(subject)
            ours.add(prompt)
            for check in suite.checks:
                for phrase in [*check.params.interventions, *(check.params.controls or ())]:
                    ours.add(f"{prompt} {phrase.replace('{subject}', subject)}")
    assert len(rows) == 246 and ours == {row["Sentence"] for row in rows}
    objects = {row["Attribute"] for row in rows if row["Category"] == "object"}
    assert len(objects) == 8 and {row["Attribute"] for row in rows
                                  if row["Category"] == "culture"} == {"bride", "groom", "wedding"}


def test_intermit_suite_is_table_3_at_epsilon_0_35():
    suite = load_suite(PAPER / "intermit_table1.t2i.yaml")
    checks = {c.id: c.params for c in suite.checks}
    assert len(checks) == 26 and {p.epsilon for p in checks.values()} == {0.35}
    assert checks["intermit_doctor"].priority == {a: 0.2 for a in
                                                  ("age", "bodytype", "clothing", "ethnicity", "gender")}
    assert all(2 <= len(p.priority) <= 5 for p in checks.values())
    text = (PAPER / "intermit_table1.t2i.yaml").read_text()
    assert "# doctor: mitigated gender, bodytype in 2 step(s); MitAmt 0.28 (ITI-GEN 0.45)" in text


def test_bgps_suite_is_the_papers_search():
    suite = load_suite(PAPER / "bgps_occupations.t2i.yaml")
    params = [c.params for c in suite.checks]
    assert len(params) == 22
    assert {(p.beam, p.expansion, p.prompts, p.latents, p.lam) for p in params} == {(10, 10, 100, 10, 10)}
    assert {p.instruction for p in params} == {"paper", "paper_biased"}
    assert {p.scenario for p in params if p.instruction == "paper_biased"} == \
        {"object", "activity", "context", "place"}


@pytest.mark.parametrize("suite", list(SUITES))
def test_plan_prints_each_paper_suites_images(pytester, paper_zoo, tmp_path, suite):
    result, _ = run_paper_suite(pytester, paper_zoo, tmp_path, suite, "sd", "--t2i-plan")
    text = result.stdout.str()
    assert re.search(r"the checks expect [\d,]+ images", text), text[-2000:]
    assert len(re.findall(rf"{suite}\.t2i\.yaml::\w+", text)) >= SUITES[suite]
