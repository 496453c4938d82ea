"""The paper's occupation suite (BiasConnect Table 2) validates, composes for InterMit, and is
collected only for a real generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_t2ibias.methods.intermit import combination_prompt, suite_insertions
from pytest_t2ibias.suite.load import load_suite

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "example_suites" / "paper" / "occupations.t2i.yaml"


def test_the_paper_suite_validates():
    suite = load_suite(PAPER)
    assert len(suite.subjects) == 26 and "social worker" in suite.subjects
    assert list(suite.axes) == ["gender", "age", "ethnicity", "bodytype", "environment",
                                "clothing", "emotion", "disability"]
    disability = suite.axes["disability"]
    assert disability.choices == ("blind", "hearing aid", "wheelchair", "fit")
    assert len(disability.counterfactuals) == 4
    assert {c.kind for c in suite.checks} == {"is_nonnegative", "w1_below"}
    spillover = next(c for c in suite.checks if c.kind == "is_nonnegative")
    assert spillover.params.tolerance == 0.05 and spillover.params.confidence == 0.95


def test_every_counterfactual_combines_by_prompt_modification():
    suite = load_suite(PAPER)
    insertions = suite_insertions(suite)  # raises if a template is not an insertion
    assert set(insertions) == set(suite.axes)
    prompt = combination_prompt(suite, "nurse", (("environment", "indoor"), ("gender", "female"),
                                                 ("clothing", "formal")), insertions)
    assert prompt == "A photo of a female nurse working indoors in formal attire"
    assert combination_prompt(suite, "chef", (("ethnicity", "asian"),), insertions) == \
        "A photo of an asian chef"


def _collect(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest_inprocess(
        str(ROOT / "example_suites"), "--collect-only", "-q", "-p", "no:cacheprovider",
        f"--rootdir={ROOT}", "-c", str(ROOT / "pyproject.toml"), *args)
    return result.stdout.str()


def test_not_collected_on_the_toy_models_but_on_a_real_one(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.delenv("T2IBIAS_PAPER_SUITES", raising=False)
    toy = _collect(pytester)
    assert "paper/" not in toy and "toy_occupations.t2i.yaml::gender_balance" in toy
    # with a real judge too: the toy CLIP cannot read its statements (a collection error)
    output = _collect(pytester, "--t2i-model=CompVis/stable-diffusion-v1-4",
                      "--t2i-vqa=Salesforce/blip-vqa-base")
    assert "paper/occupations.t2i.yaml::spillover[nurse-gender]" in output
    assert "paper/occupations.t2i.yaml::balance[social worker-disability]" in output
