"""One report row as the saved-run commands' tests write it."""

from __future__ import annotations

from pytest_t2ibias.reports.rows import ReportRow


def row(subject: str, value: float, width: float = 0.05, status: str = "passed") -> ReportRow:
    return ReportRow(nodeid=f"toy.t2i.yaml::gate[{subject}-gender]", check="w1_below",
                     subject=subject, axis="gender", value=value, low=value - width,
                     high=value + width, n=100, confidence=0.95, threshold=0.5,
                     figures={"label": subject}, check_id="gate",
                     outcome="pass" if status == "passed" else "fail",
                     margin=0.5 - value, gate_confidence=0.95, about="gender", reason="")


