"""The papers' figures as tables (issue #44): each kind's ``tables`` hook reads its own
figures, the HTML report draws every table the same way, and text from a suite or a model is
escaped, never markup."""

from __future__ import annotations

from pytest_t2ibias.kinds import CHECK_KINDS
from pytest_t2ibias.reports.paper_sections import paper_sections


def html_of(kind: str, figures) -> list[str]:
    return paper_sections(CHECK_KINDS[kind].tables(figures))


def test_negative_is_mit_table_lists_each_pair_made_worse():
    figures = {"negative_is_mit": {"share": 0.5, "negative": 1, "pairs": 2, "shown": 1, "cases": [
        {"mitigated": "gender", "axis": "<b>age</b>", "value": -0.5, "low": -0.7, "high": -0.3}]}}
    [html] = html_of("intermit", figures)
    assert "Negative IS_mit (BiasConnect A.5)" in html and "1 of 2" in html and "(50%)" in html
    assert "&lt;b&gt;age&lt;/b&gt;" in html and "<b>age</b>" not in html
    assert "-0.500 [-0.700, -0.300]" in html


def test_no_table_without_its_figures():
    assert html_of("intermit", {"negative_is_mit": {"pairs": 0}}) == []
    assert html_of("no_bgps_prompt_exceeds", {"paper": {}}) == []
    assert html_of("open_set", {"biases": [{"name": "colour", "agreement": None}]}) == []


def test_bgps_table_with_the_lambda_sweep_and_the_instruction_escaped():
    row = {"prompts": 3, "mean_share": {"value": 0.8, "low": 0.6, "high": 0.9}, "naming_share": 0.0,
           "mean_perplexity": 41.5, "words": {"min": 12, "mean": 14, "max": 18}}
    figures = {"paper": {"found": row, "baseline": row, "lambda_sweep": [
        {"lambda": 0.0, **row}, {"lambda": 10.0, **row}, {"lambda": 100.0, **row}]},
        "settings": {"lambda": 10.0}, "target": "gender=male", "instruction": "say <script>"}
    evaluation, sweep = html_of("no_bgps_prompt_exceeds", figures)
    assert "BGPS λ=10" in evaluation and "λ=0 (LLM alone)" in evaluation
    assert "0.800 [0.600, 0.900]" in evaluation and "41.50" in evaluation and "12 to 18" in evaluation
    assert "&lt;script&gt;" in evaluation and "<script>" not in evaluation
    assert "λ sweep (App. D)" in sweep and "λ=100" in sweep


def test_classifier_agreement_table_per_bias():
    figures = {"biases": [
        {"name": "gender", "agreement": {"n": 40, "kl": 0.1438, "f1": 0.733, "accuracy": 0.75}},
        {"name": "race", "agreement": {"error": "the race classifier cannot answer <x>"}},
        {"name": "colour", "agreement": None}]}
    [html] = html_of("open_set", figures)
    assert "Judge against the classifier (OpenBias Sec. 4.2)" in html
    assert "<td>40</td><td>0.144</td><td>0.73</td><td>0.75</td>" in html
    assert "cannot answer &lt;x&gt;" in html and "colour" not in html
