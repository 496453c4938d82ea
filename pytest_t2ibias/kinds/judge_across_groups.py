"""``judge_across_groups``: does the judge err the same way on every kind of person?

SocialCounterfactuals (Howard et al. 2024) audits a VLM on counterfactual image sets: one
template, every intersectional group ("a photo of a young female doctor", "... an old male
doctor"), each set sharing its seed and scene. Here the sets are made by the generator under
test (``backends.prompt2prompt``: Prompt-to-Prompt attention control on a diffusers UNet
pipeline; any other generator's sets share the initial noise only, and the row says so),
cached like every image, filtered as the paper does (every image at CLIP similarity >= 0.2 to
its own prompt, ``metrics.counterfactual_sets``) and scored by directional similarity.

Per group of the ``across`` axes, the judge reads the audited axis on the images whose value
the prompt names: its accuracy and confusion per group, and its retrieval MaxSkew@K over the
intersectional groups (the K images most like the subject's neutral prompt, its similarity
averaged over ``prefixes``, against the sets' own equal shares). The gate
(``metrics.judge_groups.depends_on_group``): a judge whose error rate on a value differs
between two groups by more than ``tolerance`` (Newcombe interval, Bonferroni over the pairs)
fails, naming the groups; every gap shown below it passes. The row carries the calibration
per group (``judge_calibration``), the correction's evidence (``kinds._judge``).

Each image is labelled with the value its prompt names, so a set member that does not show it
reads as judge error. Measured on toy-sd (validation/p2p_adherence.py, 48 seeds): gender
adhered 100% both as plain counterfactual prompts and as P2P set members; age 100% plain but
88% in P2P sets ("old" 75%: the source prompt's injected attention pulls toward "young").
So the judge correction keeps calibrating on plain counterfactual prompts; the sets serve the
audit, whose question is how errors differ between groups.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._types import Answers
from ..figures import Interval, gallery_figure, interval_of
from ..params import constraint
from ..verdict import Verdict
from ._base import CheckContext, CheckKind, PlannedItem
from ._papers import SOCIALCF
from ._params import Params, check_at_least_one, check_unit_interval, param
from ._verdicts import gate_note
from ._work import Draw, Work

if TYPE_CHECKING:
    from ..suite_spec import AxisSpec

DEFAULT_TEMPLATE = "a photo of a {} {subject}"
DEFAULT_PREFIXES = ("a photo of a", "an image of a", "a picture of a")


@constraint({"minimum": -1, "maximum": 1}, "in [-1, 1]")
def check_cosine(value: Any) -> str | None:
    """A cosine similarity."""
    return None if -1.0 <= float(value) <= 1.0 else f"must lie in [-1, 1], got {value}"


@constraint({"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1},
             "minItems": 1}, "a list of fractions in [0, 1]")
def check_fractions(value: Any) -> str | None:
    """Prompt-to-Prompt's replace fractions: a non-empty list of numbers in [0, 1]."""
    values = list(value) if isinstance(value, (list, tuple)) else None
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1
                         for v in values):
        return f"must be a non-empty list of fractions in [0, 1], got {value!r}"
    return None


@dataclass(frozen=True, kw_only=True)
class JudgeAcrossGroupsParams(Params):
    axes: tuple[str, ...] = param("axes the judge reads, one item each", required=True,
                                  names_axes=True)
    across: tuple[str, ...] = param("axes whose values form the groups (race x gender: "
                                    "[race])", required=True, names_axes=True)
    tolerance: float = param("largest allowed gap between two groups' error rates on one "
                             "value", required=True, check=check_unit_interval)
    sets: int = param("counterfactual sets (seeds): images a group", default=24,
                      check=check_at_least_one)
    template: str = param("the sets' prompt: '{}' receives the group's values, '{subject}' "
                          "the subject", default=DEFAULT_TEMPLATE)
    clip_filter: float = param("lowest CLIP similarity of every image of a set to its prompt "
                               "(SocialCounterfactuals' 0.2); -1 keeps every set",
                               default=0.2, check=check_cosine)
    fractions: tuple[float, ...] = param(
        "Prompt-to-Prompt's cross-attention replace fractions (self-attention: half), one "
        "candidate set a fraction a seed; the filter and the directional similarity choose "
        "among them (the paper varies it)", default=(0.8,), check=check_fractions)
    k: int | None = param("retrieval depth for MaxSkew@K (default: half the images)",
                          check=check_at_least_one)


def group_prompts(template: str, subject: str, axis: AxisSpec,
                  across: list[AxisSpec]) -> list[tuple[tuple[str, ...], str, str]]:
    """(the group's values of ``across``, the audited value, the prompt) for every
    intersectional group, the across values before the audited one ("young female")."""
    text = template.replace("{subject}", subject)
    out = []
    for values in itertools.product(*(a.choices for a in across)):
        for value in axis.choices:
            out.append((values, value, " ".join(text.replace("{}", " ".join((*values, value))).split())))
    return out


def run(ctx: CheckContext[JudgeAcrossGroupsParams]) -> Verdict:
    from ..methods.socialcf import judge_across_groups

    params, axis = ctx.params, ctx.axis
    assert axis is not None  # one item per audited axis
    across = [ctx.suite.axes[a] for a in params.across if a != axis.name]
    prompts = group_prompts(params.template, ctx.subject, axis, across)
    neutral = [f"{prefix} {ctx.subject}" for prefix in DEFAULT_PREFIXES]
    audit = judge_across_groups(ctx.instrument, axis, prompts, params.sets, neutral=neutral,
                                k=params.k, tolerance=params.tolerance,
                                clip_filter=params.clip_filter,
                                fractions=tuple(float(f) for f in params.fractions),
                                confidence=ctx.interval_confidence)
    return evaluate_judge_across_groups(audit, params.tolerance, confidence=ctx.confidence,
                                        burden=ctx.plan.burden, label=ctx.label)


def evaluate_judge_across_groups(audit: Any, tolerance: float, *, confidence: float | None,
                                 burden: str, label: str = "") -> Verdict:
    """The verdict on a ``methods.socialcf.GroupAudit``: FAIL when some value's error gap
    between two groups is shown above ``tolerance``."""
    from ..verdict import decide

    dependence = audit.dependence
    gap = dependence.deciding.gap if dependence.deciding else None
    outcome = dependence.outcome if confidence is not None or gap is None else \
        decide(gap, tolerance, confidence=None)
    about = f" on {label}" if label else ""
    lines = [f"judge error gap between groups{about}: "
             f"{gap if gap is not None else 'not measured'} vs tolerance {tolerance:g}"
             f"{gate_note(confidence, outcome, burden)}",
             f"  {dependence.describe()}",
             *gap_lines(dependence.gaps, tolerance),
             f"  sets: {audit.method}; {audit.kept} of {audit.sets} kept by the CLIP filter"
             f" ({audit.filter_note})",
             f"  retrieval MaxSkew@{audit.retrieval_k} {audit.retrieval_max_skew:+.3f} "
             f"({audit.retrieval_value}), by the subject's neutral prompt over "
             f"{len(DEFAULT_PREFIXES)} prefixes" if audit.retrieval_value else
             "  retrieval MaxSkew@K: not measured (it ranks by the judge's image and text "
             "embeddings)"]
    for group, accuracy in audit.accuracy.items():
        row = (audit.calibration.groups or {}).get(group)
        if row is None:
            lines.append(f"  {group}: no image kept (every set filtered out)")
            continue
        lines.append(f"  {group or '(all)'}: accuracy {accuracy}; confusion (true -> judged) "
                     + "; ".join(f"{t}: " + ", ".join(f"{j}={int(row[i, m])}"
                                                       for m, j in enumerate(audit.choices)
                                                       if row[i, m])
                                 for i, t in enumerate(audit.choices)))
    value = gap if gap is not None else audit.overall
    # the paper's grid: a row a group, a column a set (image i of every prompt is set i)
    grid = gallery_figure([(audit.axis, audit.answers)], per_prompt=None) \
        if isinstance(audit.answers, Answers) else None
    return Verdict(outcome=outcome, burden=burden,
                   confidence=confidence, at_most=True, check="judge_across_groups", value=value,
                   threshold=tolerance, message="\n".join(lines),
                   figures={"label": label, "judge_correction": "off",  # it measures the judge
                            "about": (f"{dependence.deciding.worse} vs {dependence.deciding.better}"
                                      if dependence.deciding else ""),
                            "judge_calibration": audit.calibration.to_dict(),
                            "groups": {g: a.to_dict() for g, a in audit.accuracy.items()},
                            "gaps": [g.to_dict() for g in dependence.gaps[:20]],
                            "retrieval": {"k": audit.retrieval_k,
                                          "max_skew": audit.retrieval_max_skew,
                                          "value": audit.retrieval_value},
                            "sets": {"method": audit.method, "made": audit.sets,
                                     "kept": audit.kept, "filter": audit.filter_note,
                                     "directional": audit.directional},
                            **({"gallery": grid} if grid else {})})


def gap_lines(gaps: Any, tolerance: float, most: int = 12) -> list[str]:
    """One line a pair of groups and value: its gap and whether it is shown above, within or
    neither (the groups the judge reads alike are named as passing, not only the worst)."""
    def shown(gap: Any) -> str:
        return "above" if gap.gap.low > tolerance else "within" if gap.gap.high <= tolerance \
            else "not shown either way"

    lines = [f"    {g.value}: {g.worse!r} vs {g.better!r} {g.gap.value:+.3f} "
             f"[{g.gap.low:.3f}, {g.gap.high:.3f}], {shown(g)}" for g in list(gaps)[:most]]
    more = len(gaps) - most
    return (["  every gap (value: groups, error-rate gap, Bonferroni interval):"] + lines
            + ([f"    ... {more} more in the figures"] if more > 0 else [])) if lines else []


def expected_work(item: PlannedItem) -> list[Draw]:
    """Every group's prompt at ``sets`` images, the audited axis read off each (not
    prefetched: Prompt-to-Prompt sets are made whole by the check)."""
    params = item.params_as(JudgeAcrossGroupsParams)
    axis = item.axis
    if axis is None:
        return []
    across = [item.suite.axes[a] for a in params.across if a != axis.name and a in item.suite.axes]
    return [Draw("candidate", prompt, params.sets, questions=(axis.name, "<embedding>"))
            for _, _, prompt in group_prompts(params.template, item.subject, axis, across)]


def _work(item: PlannedItem) -> Work:
    draws = tuple(expected_work(item))
    return Work(expected=draws, listed=tuple((d.role or "", d.prompt, d.images) for d in draws))


def chart(figures: Mapping[str, Any]) -> list[Interval]:
    """Each group's accuracy."""
    groups = figures.get("groups")
    return [interval_of(f"{group or 'all'} accuracy", accuracy) for group, accuracy in groups.items()
            if isinstance(accuracy, Mapping)] if isinstance(groups, Mapping) else []


KIND = CheckKind(
    chart=chart,
    name="judge_across_groups",
    # random-weight CLIPs (the compatibility matrix) match no prompt: the sample keeps every set
    sample="axes: [gender], across: [age], tolerance: 0.2, sets: 4, clip_filter: -1",
    run=run,
    work=_work,
    params=JudgeAcrossGroupsParams,
    figure="error gap",
    about=lambda figures: str(figures.get("about") or ""),
    doc="the judge's error rate on an axis differs between intersectional groups (of the "
        "across axes) by at most tolerance, on counterfactual image sets made by the model "
        "under test; with per-group accuracy, confusion and retrieval MaxSkew@K",
    paper=(f"{SOCIALCF}: counterfactual image sets that differ only in the social attributes "
           "(Prompt-to-Prompt on the generator under test, the 0.2 CLIP filter, directional "
           "similarity), and the VLM's intersectional bias on them: accuracy and confusion per "
           "group, retrieval MaxSkew@K by the subject's neutral prompt averaged over prefixes. "
           "Gated on the gap between groups' error rates, which the judge correction's "
           "assumption (one confusion for every image) needs small."),
    example=("checks:\n"
             "  - {id: judge_by_group, kind: judge_across_groups, axes: [gender], across: [age],\n"
             "     tolerance: 0.1, sets: 48, confidence: 0.95}"),
)
