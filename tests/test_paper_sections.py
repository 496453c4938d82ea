"""The papers' figures as HTML sections (issue #44), read by figure key whatever the kind;
text from a suite or a model is escaped, never markup."""

from __future__ import annotations

from pytest_t2ibias.reports.paper_sections import paper_sections


def test_negative_is_mit_section_lists_each_pair_made_worse():
    figures = {"negative_is_mit": {"share": 0.5, "negative": 1, "pairs": 2, "shown": 1, "cases": [
        {"mitigated": "gender", "axis": "<b>age</b>", "value": -0.5, "low": -0.7, "high": -0.3}]}}
    [html] = paper_sections(figures)
    assert "Negative IS_mit (BiasConnect A.5)" in html and "1 of 2" in html and "(50%)" in html
    assert "&lt;b&gt;age&lt;/b&gt;" in html and "<b>age</b>" not in html
    assert "-0.500 [-0.700, -0.300]" in html


def test_no_section_without_its_figures():
    assert paper_sections({}) == []
    assert paper_sections({"negative_is_mit": {"pairs": 0}, "paper": {}}) == []


def test_bgps_table_with_the_lambda_sweep_and_the_instruction_escaped():
    row = {"prompts": 3, "mean_share": {"value": 0.8, "low": 0.6, "high": 0.9}, "naming_share": 0.0,
           "mean_perplexity": 41.5, "words": {"min": 12, "mean": 14, "max": 18}}
    figures = {"paper": {"found": row, "baseline": row, "lambda_sweep": [
        {"lambda": 0.0, **row}, {"lambda": 10.0, **row}, {"lambda": 100.0, **row}]},
        "paper_title": "BGPS, Tables 1-2", "settings": {"lambda": 10.0}, "target": "gender=male",
        "instruction": "say <script>"}
    [html] = paper_sections(figures)
    assert "BGPS λ=10" in html and "λ=0 (LLM alone)" in html and "λ=100" in html
    assert "0.800 [0.600, 0.900]" in html and "41.50" in html and "12 to 18" in html
    assert "&lt;script&gt;" in html and "<script>" not in html


def test_classifier_agreement_section_per_bias():
    figures = {"biases": [
        {"name": "gender", "agreement": {"n": 40, "kl": 0.1438, "f1": 0.733, "accuracy": 0.75}},
        {"name": "race", "agreement": {"error": "the race classifier cannot answer <x>"}},
        {"name": "colour", "agreement": None}]}
    [html] = paper_sections(figures)
    assert "Judge against the classifier (OpenBias Sec. 4.2)" in html
    assert "<td>40</td><td>0.144</td><td>0.73</td><td>0.75</td>" in html
    assert "cannot answer &lt;x&gt;" in html and "colour" not in html
