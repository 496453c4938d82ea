"""A cost kind's row (issue #38) says how it read its judge, as every kind's does (#33)."""

from __future__ import annotations

from pytest_t2ibias._types import Estimate
from pytest_t2ibias.kinds.erasure import evaluate_erasure
from pytest_t2ibias.kinds.prompt_alignment import evaluate_prompt_alignment
from pytest_t2ibias.methods.costs import Cost


def _cost(figure: str) -> Cost:
    shares = dict(n=200, confidence=0.95, method="newcombe")
    return Cost(figure, candidate=Estimate(0.80, 0.74, 0.85, **shares),
                baseline=Estimate(0.95, 0.91, 0.97, **shares),
                change=Estimate(-0.15, -0.21, -0.09, **shares), relative=False, images=200)


def test_a_cost_row_says_it_reads_its_judge_uncorrected_and_why():
    embedding = evaluate_prompt_alignment(_cost("prompt_alignment"), tolerance=0.01)
    kept = evaluate_erasure(_cost("erasure"), tolerance=0.05)
    assert embedding.figures["judge_correction"] == kept.figures["judge_correction"] == "off"
    assert "no confusion to correct" in embedding.figures["judge_uncorrected"]
    assert "filter question has no calibration" in kept.figures["judge_uncorrected"]
    assert kept.outcome == "fail"  # -0.15 [-0.21, -0.09]: wholly beyond a 5-point loss
