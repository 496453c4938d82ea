"""The papers' own suites (issue #44): ENTIGEN's profession benchmark, InterMit's Table 1 and
BGPS' experiments, each collected and run on tiny random-weight models built offline (SD 1.x,
SDXL, CLIP, a chat LM): every check's row present and none an ERROR; models and images per
prompt come from the options, never from an edited suite; ``--t2i-plan`` prints each suite's
images. BGPS' paper-size searches (100 prompts of beam 10 x expansion 10) are shrunk inside the
test process only (``gate_of``), as no option sizes a search."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from tiny_models import import_every_class

from pytest_t2ibias.suite.load import load_suite

import_every_class()  # before pytester's in-process runs

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "example_suites" / "paper"
SUITES = {"entigen_professions": 2, "intermit_table1": 26, "bgps_occupations": 22}
"""Each new paper suite and its checks."""


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


@pytest.fixture(scope="module")
def paper_zoo(tmp_path_factory, model_zoo):
    """Tiny SD, SDXL and CLIP whose word tokenizers know every word of the paper suites (a
    judge that reads a choice's statement as <unk> is refused at collection), beside the
    zoo's chat LM and GPT-2."""
    from pytest_t2ibias import testing

    words = sorted({w for f in SUITES for w in re.findall(r"[a-z]+", (PAPER / f"{f}.t2i.yaml")
                                                          .read_text().lower())}
                   | set(testing.DEFAULT_WORDS))
    root = tmp_path_factory.mktemp("paper-zoo")
    with testing.torch_threads(1):
        return {"sd": testing.make_tiny_pipeline(root / "sd", words=words),
                "sdxl": testing.make_tiny_sdxl(root / "sdxl", words=words),
                "clip": testing.make_tiny_clip(root / "clip", words=words),
                "llama-chat": model_zoo["llama-chat"], "gpt2": model_zoo["gpt2"]}


def _shrink_bgps_searches(monkeypatch):
    """A paper-size search takes hours even on tiny models: search 1 prompt of 3 tokens with
    beam 2 x expansion 2 and 2 latents, the probe at step 1 (the suite is not edited)."""
    from pytest_t2ibias.kinds import no_bgps_prompt_exceeds as kind

    original = kind.gate_of

    def small(*args, **kwargs):
        gate = original(*args, **kwargs)
        settings = dataclasses.replace(gate.settings, prompts=1, beam_size=2, expansion=2,
                                       max_new_tokens=3)
        return dataclasses.replace(gate, settings=settings, latents=2, step_index=1)

    monkeypatch.setattr(kind, "gate_of", small)


def _run(pytester, models, tmp_path, suite: str, generator: str, *extra: str):
    for name in ("data", f"{suite}.t2i.yaml"):
        source = PAPER / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, pytester.path / name)
    (pytester.path / "t2ibias.json").write_text("{}")
    pytester.makeini(textwrap.dedent(f"""\
        [pytest]
        t2i_cache_dir = {tmp_path / 'cache'}
        t2i_device = cpu
        t2i_bootstrap = 50
    """))
    report = tmp_path / f"{suite}.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-p", "no:randomly", f"--t2i-model={models[generator]}",
        f"--t2i-vqa={models['clip']}", f"--t2i-llm={models['llama-chat']}",
        f"--t2i-eval-llm={models['gpt2']}", "--t2i-images-per-prompt=2", "--t2i-steps=2",
        "--t2i-height=16", "--t2i-width=16", f"--t2i-json={report}", *extra)
    return result, report


@pytest.mark.parametrize("suite", list(SUITES))
def test_plan_prints_each_paper_suites_images(pytester, paper_zoo, tmp_path, suite):
    result, _ = _run(pytester, paper_zoo, tmp_path, suite, "sd", "--t2i-plan")
    text = result.stdout.str()
    assert re.search(r"the checks expect [\d,]+ images", text), text[-2000:]
    assert len(re.findall(rf"{suite}\.t2i\.yaml::\w+", text)) >= SUITES[suite]


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "generator"), [("entigen_professions", "sd"),
                                                  ("entigen_professions", "sdxl"),
                                                  ("bgps_occupations", "sd"),
                                                  ("intermit_table1", "sd")])
def test_each_paper_suite_runs_on_tiny_models_with_every_row_and_no_error(
        pytester, paper_zoo, tmp_path, monkeypatch, suite, generator):
    _shrink_bgps_searches(monkeypatch)
    result, report = _run(pytester, paper_zoo, tmp_path, suite, generator)
    checks = json.loads(report.read_text())["checks"]
    ids = {c["check_id"] for c in checks}
    expected = {c.id for c in load_suite(PAPER / f"{suite}.t2i.yaml").checks}
    assert ids == expected, result.stdout.str()[-3000:]
    errors = [(c["nodeid"], c.get("reason")) for c in checks if c["status"] == "error"]
    assert errors == [], errors[:3]
