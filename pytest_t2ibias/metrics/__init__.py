"""Pure math on answers: distributions, distances, intervals and the five papers' scores.

numpy and scipy only; no torch, no pytest. Every figure comes with an interval.
"""

from pytest_t2ibias.metrics.costs import (
    clip_scores,
    erasure_change,
    iqa_scores,
    kept_share,
    kid,
    kid_estimate,
    mean_change,
    mean_estimate,
    vendi_change,
    vendi_estimate,
    vendi_score,
)
from pytest_t2ibias.metrics.counterfactual_sets import (
    CandidateScore,
    Embedder,
    caption_similarities,
    directional_similarity,
    score_candidate,
    select_candidates,
)
from pytest_t2ibias.metrics.distances import agreement, kl_divergence, normalised_w1, severity
from pytest_t2ibias.metrics.distributions import (
    Distribution,
    distribution_of,
    ideal_shares,
    pooled_shares,
)
from pytest_t2ibias.metrics.entigen import bias, diversity
from pytest_t2ibias.metrics.intersectional import (
    ISMatrix,
    intersectional_sensitivity,
    mitigation_effect,
)
from pytest_t2ibias.metrics.intervals import (
    MatrixEstimate,
    bootstrap_estimate,
    bootstrap_matrix,
    difference_of_shares,
    jeffreys_interval,
    wilson_interval,
)
from pytest_t2ibias.metrics.judge import (
    JudgeCalibration,
    calibration_from_labels,
    correct_shares,
    correction_mode,
    judged_estimate,
    readability,
)
from pytest_t2ibias.metrics.judge_groups import (
    ErrorGap,
    GroupDependence,
    depends_on_group,
    error_gaps,
    group_counts,
)
from pytest_t2ibias.metrics.posterior import (
    max_skew_estimate,
    posterior_estimate,
    severity_estimate,
    w1_estimate,
)
from pytest_t2ibias.metrics.power import decision_rate, expected_images, images_needed
from pytest_t2ibias.metrics.sequential import (
    betting_share_interval,
    betting_share_sequence,
    chance_to_decide,
    chances_to_decide,
    doubling_looks,
    look_confidence,
    look_confidences,
    recursive_levels,
    spent_alpha,
)
from pytest_t2ibias.metrics.skew import (
    SkewValue,
    max_skew_at_k,
    mean_max_skew_at_k,
    most_over_represented,
    skew_at_k,
)

__all__ = [
    "CandidateScore",
    "Distribution",
    "Embedder",
    "ErrorGap",
    "GroupDependence",
    "ISMatrix",
    "JudgeCalibration",
    "MatrixEstimate",
    "SkewValue",
    "agreement",
    "betting_share_interval",
    "betting_share_sequence",
    "bias",
    "bootstrap_estimate",
    "bootstrap_matrix",
    "calibration_from_labels",
    "caption_similarities",
    "chance_to_decide",
    "chances_to_decide",
    "clip_scores",
    "correct_shares",
    "correction_mode",
    "decision_rate",
    "depends_on_group",
    "difference_of_shares",
    "directional_similarity",
    "distribution_of",
    "diversity",
    "doubling_looks",
    "erasure_change",
    "error_gaps",
    "expected_images",
    "group_counts",
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
    "most_over_represented",
    "normalised_w1",
    "pooled_shares",
    "posterior_estimate",
    "readability",
    "recursive_levels",
    "score_candidate",
    "select_candidates",
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
