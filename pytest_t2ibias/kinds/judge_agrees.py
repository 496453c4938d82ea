"""``judge_agrees``: an audit of the judge on images whose attributes are known.

Every figure of this plugin is read by a judge (VQA or an attribute classifier); this kind
measures it on a labelled folder: per axis, the judge's accuracy with a Wilson interval,
per-value accuracy, the confusion matrix, and SocialCounterfactuals' retrieval MaxSkew@K
(``methods.socialcf``). One item per check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..figures import Interval, interval_of
from ..verdict import DEFAULT_BURDEN, Verdict, decide, worst
from ._base import CheckContext, CheckKind, PlannedItem
from ._papers import SOCIALCF
from ._params import Params, check_at_least_one, check_unit_interval, param
from ._verdicts import gate_note, verb_for
from ._work import Draw, Work


@dataclass(frozen=True, kw_only=True)
class JudgeAgreesParams(Params):
    axes: tuple[str, ...] = param("axes to audit", required=True, names_axes=True)
    folder: str = param("labelled images: index.jsonl with {file, <axis>: value} per line",
                        required=True)
    threshold: float = param("lowest allowed accuracy of the judge (VQA or classifier) per axis",
                             required=True, check=check_unit_interval)
    k: int | None = param("retrieval depth for MaxSkew@K (default: half the folder)",
                          check=check_at_least_one)


def evaluate_judge_agrees(audits: Mapping[str, Any], threshold: float, *,
                          confidence: float | None = None, burden: str = DEFAULT_BURDEN,
                          label: str = "") -> Verdict:
    """Fail when the judge's accuracy on an axis (Wilson interval) is below ``threshold``.
    ``audits``: axis -> ``methods.socialcf.AxisAudit``."""
    outcomes = {a: decide(audit.accuracy, threshold, confidence=confidence, at_most=False)
                for a, audit in audits.items()}
    outcome = worst(list(outcomes.values()))
    weakest = min(audits.values(), key=lambda audit: audit.accuracy.value)
    lowest = weakest.accuracy
    lines = [f"judge accuracy{f' on {label}' if label else ''}: lowest {lowest} vs floor "
             f"{threshold:.3f}{gate_note(confidence, outcome, burden)}"]
    for name, audit in audits.items():
        retrieval = (f"retrieval MaxSkew@{audit.retrieval_k} {audit.retrieval_max_skew:+.3f} "
                     f"({audit.retrieval_value}"
                     + (f", worst of {len(audit.retrieval_by_subject)} subjects)"
                        if len(audit.retrieval_by_subject) > 1 else ")")
                     if audit.retrieval_max_skew is not None else audit.retrieval_note)
        lines.append(f"  {name} ({audit.judge}): accuracy {audit.accuracy} "
                     f"[{verb_for(outcomes[name], 'meets the floor', 'below the floor')}]; "
                     f"{retrieval}")
        lines.append("    per value: " + "; ".join(f"{v} {e.value:.2f} [{e.low:.2f}, {e.high:.2f}] n={e.n}"
                                                   for v, e in audit.per_value.items()))
        lines.append("    confusion (true -> judged): " + "; ".join(
            f"{v}: " + ", ".join(f"{w}={n}" for w, n in row.items() if n) for v, row in audit.confusion.items()))
    return Verdict(outcome=outcome, burden=burden,
                   confidence=confidence, at_most=False, check="judge_agrees", value=lowest, threshold=threshold,
                   message="\n".join(lines),
                   figures={"audits": {a: audit.to_dict() for a, audit in audits.items()},
                            "label": label, "about": f"{weakest.axis} ({weakest.judge})",
                            "judge_correction": "off"})  # it measures the judge itself


def run(ctx: CheckContext[JudgeAgreesParams]) -> Verdict:
    from ..methods.socialcf import audit_judge

    params = ctx.params
    folder = (ctx.suite.path.parent / params.folder).resolve()
    audits = audit_judge(ctx.instrument, folder, [ctx.suite.axes[a] for a in params.axes],
                         k=params.k, confidence=ctx.interval_confidence)
    return evaluate_judge_agrees(audits, params.threshold, confidence=ctx.confidence,
                                 burden=ctx.plan.burden, label=str(params.folder))


def expected_work(item: PlannedItem) -> list[Draw]:
    """No images to generate (``role`` None: the folder's), an answer per labelled image and
    axis, and the retrieval question once per image."""
    import json

    params = item.params_as(JudgeAgreesParams)
    folder = (item.suite.path.parent / params.folder).resolve()
    try:
        rows = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines()
                if line.strip()]
    except (OSError, ValueError):  # the run reports the folder
        return []
    where = f"labelled:{folder}"
    work = [Draw(None, where, len(rows), questions=("<retrieval>",))]
    for name in params.axes:
        axis = item.suite.axes[name]
        labelled = sum(1 for row in rows if isinstance(row, dict) and row.get(name) in axis.choices)
        work.append(Draw(None, where, labelled, questions=(name,)))
    return work


def chart(figures: Mapping[str, Any]) -> list[Interval]:
    """The judge's accuracy on each audited axis."""
    audits = figures.get("audits")
    return [interval_of(f"{axis} accuracy", a.get("accuracy")) for axis, a in audits.items()
            if isinstance(a, Mapping)] if isinstance(audits, Mapping) else []


KIND = CheckKind(
    chart=chart,
    name="judge_agrees",
    sample="axes: [gender], folder: labelled, threshold: 0.5",
    run=run,
    work=lambda item: Work(expected=tuple(expected_work(item))),
    per_subject=False,
    params=JudgeAgreesParams,
    doc="the judge (VQA or the axis' classifier) reads the axes off labelled images at least "
        "threshold accurately (Wilson interval), with per-value accuracy, confusion and MaxSkew@K",
    paper=(f"An audit of the judge itself ({SOCIALCF}: accuracy and retrieval MaxSkew@K on "
           "images whose attributes are known; OpenBias' agreement checks): per axis, the "
           "accuracy of the VQA model or the axis' classifier on a labelled folder, with a "
           "Wilson interval. One item per check. The folder is relative to the suite "
           "(`python -m toyworld labelled --out DIR -n 200` makes a toy one)."),
    example=("checks:\n"
             "  - {id: judge_audit, kind: judge_agrees, axes: [gender, age], folder: labelled,\n"
             "     threshold: 0.8, confidence: 0.95}"),
)
