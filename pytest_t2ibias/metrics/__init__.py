"""Pure math on answers: distributions, distances, intervals and the five papers' scores.

numpy and scipy only; no torch, no pytest. Every figure comes with an interval.
"""

from pytest_t2ibias.metrics.costs import clip_scores
from pytest_t2ibias.metrics.costs import erasure_change
from pytest_t2ibias.metrics.costs import iqa_scores
from pytest_t2ibias.metrics.costs import kept_share
from pytest_t2ibias.metrics.costs import kid
from pytest_t2ibias.metrics.costs import kid_estimate
from pytest_t2ibias.metrics.costs import mean_change
from pytest_t2ibias.metrics.costs import mean_estimate
from pytest_t2ibias.metrics.costs import vendi_change
from pytest_t2ibias.metrics.costs import vendi_estimate
from pytest_t2ibias.metrics.costs import vendi_score
from pytest_t2ibias.metrics.distances import kl_divergence
from pytest_t2ibias.metrics.distances import normalised_w1
from pytest_t2ibias.metrics.distances import severity
from pytest_t2ibias.metrics.distributions import Distribution
from pytest_t2ibias.metrics.distributions import distribution_of
from pytest_t2ibias.metrics.distributions import ideal_shares
from pytest_t2ibias.metrics.distributions import pooled_shares
from pytest_t2ibias.metrics.entigen import bias
from pytest_t2ibias.metrics.entigen import diversity
from pytest_t2ibias.metrics.intersectional import ISMatrix
from pytest_t2ibias.metrics.intersectional import intersectional_sensitivity
from pytest_t2ibias.metrics.intersectional import mitigation_effect
from pytest_t2ibias.metrics.intervals import MatrixEstimate
from pytest_t2ibias.metrics.intervals import bootstrap_estimate
from pytest_t2ibias.metrics.intervals import bootstrap_matrix
from pytest_t2ibias.metrics.intervals import difference_of_shares
from pytest_t2ibias.metrics.intervals import jeffreys_interval
from pytest_t2ibias.metrics.intervals import wilson_interval
from pytest_t2ibias.metrics.judge import JudgeCalibration
from pytest_t2ibias.metrics.judge import calibration_from_labels
from pytest_t2ibias.metrics.judge import correct_shares
from pytest_t2ibias.metrics.judge import correction_mode
from pytest_t2ibias.metrics.judge import judged_estimate
from pytest_t2ibias.metrics.judge import readability
from pytest_t2ibias.metrics.posterior import max_skew_estimate
from pytest_t2ibias.metrics.posterior import posterior_estimate
from pytest_t2ibias.metrics.power import decision_rate
from pytest_t2ibias.metrics.power import expected_images
from pytest_t2ibias.metrics.power import images_needed
from pytest_t2ibias.metrics.posterior import severity_estimate
from pytest_t2ibias.metrics.posterior import w1_estimate
from pytest_t2ibias.metrics.sequential import betting_share_interval
from pytest_t2ibias.metrics.sequential import betting_share_sequence
from pytest_t2ibias.metrics.sequential import doubling_looks
from pytest_t2ibias.metrics.sequential import look_confidence
from pytest_t2ibias.metrics.sequential import look_confidences
from pytest_t2ibias.metrics.sequential import spent_alpha
from pytest_t2ibias.metrics.skew import SkewValue
from pytest_t2ibias.metrics.skew import max_skew_at_k
from pytest_t2ibias.metrics.skew import mean_max_skew_at_k
from pytest_t2ibias.metrics.skew import skew_at_k

__all__ = [
    "Distribution",
    "ISMatrix",
    "JudgeCalibration",
    "MatrixEstimate",
    "SkewValue",
    "betting_share_interval",
    "betting_share_sequence",
    "bias",
    "bootstrap_estimate",
    "bootstrap_matrix",
    "calibration_from_labels",
    "clip_scores",
    "correct_shares",
    "correction_mode",
    "decision_rate",
    "difference_of_shares",
    "distribution_of",
    "diversity",
    "doubling_looks",
    "erasure_change",
    "expected_images",
    "ideal_shares",
    "images_needed",
    "intersectional_sensitivity",
    "iqa_scores",
    "jeffreys_interval",
    "judged_estimate",
    "kept_share",
    "kid",
    "kid_estimate",
    "kl_divergence",
    "look_confidence",
    "look_confidences",
    "max_skew_at_k",
    "max_skew_estimate",
    "mean_change",
    "mean_estimate",
    "mean_max_skew_at_k",
    "mitigation_effect",
    "normalised_w1",
    "pooled_shares",
    "posterior_estimate",
    "readability",
    "severity",
    "severity_estimate",
    "skew_at_k",
    "spent_alpha",
    "vendi_change",
    "vendi_estimate",
    "vendi_score",
    "w1_estimate",
    "wilson_interval",
]
