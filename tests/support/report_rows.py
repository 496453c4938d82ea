"""Report rows for the report writers' tests."""

from __future__ import annotations

import math

from pytest_t2ibias.reports.rows import ReportRow


def image_key(i: int) -> str:
    """The cache key of the i-th test image."""
    return f"{i:02x}" * 32


def gallery_figures() -> dict:
    images = [{"key": image_key(0), "labels": ["male"]}, {"key": image_key(1), "labels": ["male"]},
              {"key": image_key(2), "labels": [None], "mark": "filtered"},
              {"key": image_key(9), "labels": ["female"]},  # not in the cache: a placeholder
              {"key": image_key(5), "labels": [None], "mark": "abstained"}]
    return {"axes": ["gender"], "per_prompt": 8, "prompts": 2,
            "groups": [{"prompt": "a photo of a doctor", "role": "candidate", "n": 48,
                        "images": images[:3]},
                       {"prompt": "a photo of a nurse", "role": "candidate", "n": 48,
                        "images": images[3:]}]}


def _matrix(v: float) -> dict:
    """IS[gender -> age] = v; the diagonal (mitigating gender fixes gender) is large."""
    return {"axes": ["gender", "age"], "value": [[0.95, v], [0.1, None]],
            "low": [[0.9, v - 0.1], [0.0, None]], "high": [[0.99, v + 0.1], [0.2, None]]}


def _row(check_id: str, status: str, **changes) -> ReportRow:
    fields = dict(nodeid=f"s.t2i.yaml::{check_id}[doctor-gender]", check="w1_below",
                  subject="doctor", axis="gender", value=0.7, low=0.6, high=0.8, n=48,
                  confidence=0.95, threshold=0.35,
                  figures={"at_most": True, "burden": "model"}, check_id=check_id,
                  xfail="xfail" if status in ("xfailed", "xpassed") else "",
                  outcome={"failed": "fail", "xfailed": "fail", "error": "error"}.get(status, "pass"),
                  margin=-0.35, gate_confidence=0.95, about="gender",
                  reason="beyond the limit" if status == "failed" else "", message="")
    fields.update(changes)
    return ReportRow(**fields)


def sample_rows() -> list[ReportRow]:
    distribution = {"choices": ["male", "female"], "counts": {"male": 40, "female": 8},
                    "shares": {"male": 40 / 48, "female": 8 / 48}, "n": 48,
                    "abstentions": 1, "filtered": 2}
    return [
        _row("balanced_control", "passed", value=0.1, low=0.0, high=0.2, margin=0.25),
        _row("spillover_a", "xfailed", check="is_nonnegative", threshold=-0.05, value=-0.2,
             figures={"at_most": False, "matrix": _matrix(-0.2),
                      "pairs": {"gender->age": {"value": -0.2, "low": -0.3, "high": -0.1}}}),
        _row("gender_balance", "failed", message="normalised W1 0.700 exceeds 0.350\n  answers",
             figures={"at_most": True, "burden": "model", "distribution": distribution,
                      "ideal": {"male": 0.5, "female": 0.5}, "gallery": gallery_figures()}),
        _row("spillover_b", "passed", check="is_nonnegative", threshold=-0.05, value=0.1,
             low=-0.02, high=0.25, figures={"at_most": False, "matrix": _matrix(-0.8)}),
        _row("broken", "error", value=math.nan, low=math.nan, high=math.nan, n=0,
             threshold=math.nan, reason="BackendError: no model", margin=None, figures={}),
    ]


