"""BiasConnect A.9's statistic (validation/a9_correlation.py): the paper averages one Pearson r
per prompt over that prompt's (x, y) pairs; the pooled r over every pair is another figure."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from support.validation_scripts import validation_script


def rows(subject, predicted, observed, mitigation="prompt modification"):
    return [{"subject": subject, "x": "x", "y": f"y{i}", "mitigation": mitigation,
             "predicted": {"value": p}, "observed": {"value": o}}
            for i, (p, o) in enumerate(zip(predicted, observed))]


def test_the_paper_statistic_is_the_mean_of_per_prompt_correlations():
    a9 = validation_script("a9_correlation")
    # Within each prompt the prediction is perfect (r = +1), but the prompts sit at offsets
    # that run against each other, so the pooled r over all 6 pairs is negative.
    pairs = rows("doctor", [0.0, 0.1, 0.2], [0.5, 0.6, 0.7]) + rows("nurse", [0.5, 0.6, 0.7],
                                                                     [0.0, 0.1, 0.2])
    both = a9.both_statistics(pairs)["prompt modification"]
    assert both["mean_per_prompt"]["mean_r"] == pytest.approx(1.0)
    assert both["mean_per_prompt"]["prompts"] == 2
    predicted = [0.0, 0.1, 0.2, 0.5, 0.6, 0.7]
    observed = [0.5, 0.6, 0.7, 0.0, 0.1, 0.2]
    assert both["pooled"]["r"] == pytest.approx(np.corrcoef(predicted, observed)[0, 1])
    assert both["pooled"]["r"] < 0
    # Two pairs a prompt (the gender fine-tune's) make no correlation: +-1 by construction.
    two = a9.mean_per_prompt_correlation(rows("doctor", [0.0, 0.1], [0.3, 0.1]))
    assert two["prompts"] == 0 and np.isnan(two["mean_r"])


def test_the_saved_toy_results_give_both_figures_the_docs_quote():
    a9 = validation_script("a9_correlation")
    saved = json.loads((Path(__file__).resolve().parents[2] / "validation" /
                        "a9_results.json").read_text())
    both = a9.both_statistics(saved["pairs"])["prompt modification"]
    assert round(both["pooled"]["r"], 3) == 0.654 and both["pooled"]["pairs"] == 66
    assert round(both["mean_per_prompt"]["mean_r"], 3) == 0.625
    assert both["mean_per_prompt"]["prompts"] == 11
    # to 12 places: the last bits of a correlation move with numpy's summation order
    assert _rounded(saved["correlation"]) == _rounded(a9.both_statistics(saved["pairs"]))


def _rounded(value):
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(item) for item in value]
    if isinstance(value, float):
        return "nan" if math.isnan(value) else round(value, 12)
    return value
