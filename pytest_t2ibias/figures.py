"""The figures a verdict carries beside its number, as plain builtins (xdist, JSON): the IS
matrix (``figures["matrix"]``) and the image grid (``figures["gallery"]``).

The image grid: per prompt, a few image keys and the judges' labels. Reports show people the pictures a verdict was reached on. Verdicts carry plain builtins
(xdist, JSON), so the figure holds cache keys, never pixels: the HTML report loads the
thumbnails from the cache directory when it is written (``reports.html``). At most
``PER_PROMPT`` images a prompt and ``MAX_PROMPTS`` prompts keep the JSON small; ``n`` says how
many images the prompt had.

``figures["gallery"]`` (docs/report-schema.md)::

    {"axes": [str],                   # what each label answers: an axis, or a question
     "per_prompt": int | null,        # the cap on images shown a prompt (null: all)
     "prompts": int,                  # prompts judged (groups may hold fewer: the cap)
     "groups": [{"prompt": str, "role": "candidate" | "baseline" | "",
                 "n": int,            # images of this prompt (and role) the judges saw
                 "images": [{"key": str,             # the image's cache key
                             "labels": [str | null],  # per axis; null: no answer
                             "mark": "filtered" | "abstained"}]}]}  # mark only when so
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ._test_call import shown_per_prompt
from ._types import ABSTAINED, FILTERED, Answers

SHARED_FIGURES = frozenset({
    # the gate (``Verdict.to_dict``): what the interval said, who carried the burden
    "outcome", "burden", "at_most", "value",
    # every kind's verdict (``kinds._verdicts``): what the figure is about, the label, shares
    "about", "label", "distribution",
    # the judge's calibration and correction (``kinds._judge``), one axis or several
    "judge_calibration", "judge_calibrations", "judge_correction", "judge_corrections",
    "judge_unreadable",
    # issue #44: the figure on the judge's answers as read beside a corrected one (``kinds._judge``)
    "as_read",
    # the protocol that produced the row (``session_plan``: ``plan.protocol``, gate or paper)
    "protocol",
    # this module: the IS matrix, the image grid, the prompts the model did not read
    "matrix", "gallery", "unread_prompts",
    # the cost kinds' shared figure (``kinds._costs``, ``CheckKind.measures_cost``)
    "cost",
})
"""The keys of ``Verdict.figures`` a report may read, each written by a shared piece for
every kind that has it; anything else a kind reports, it reports through its ``CheckKind``
hooks (``reason``, ``judges``, ``about``, ``chart``), never read by key outside ``kinds/``
(``tests/unit/test_kind_results.py`` holds reports/ to it)."""

if TYPE_CHECKING:
    import numpy as np

    from ._test_call import Sightings
    from .metrics import ISMatrix
    from .verdict import Verdict

PER_PROMPT = 8
MAX_PROMPTS = 16


def gallery_figure(answer_sets: Sequence[tuple[str, Answers]],
                   roles: Mapping[str, str] | None = None, *,
                   per_prompt: int | None | Literal["run"] = "run",
                   max_prompts: int = MAX_PROMPTS) -> dict[str, Any] | None:
    """The grid of ``answer_sets`` (``(axis or question, answers)``, as ``Sightings`` holds
    them): one group per prompt and role, images in the order they were requested, each
    labelled on every axis it was asked about. None when no answer names its images.
    ``per_prompt``: images kept a prompt, None for all, "run" for ``shown_per_prompt``."""
    roles = roles or {}
    cap = shown_per_prompt.get() if per_prompt == "run" else per_prompt
    axes = list(dict.fromkeys(about for about, answers in answer_sets if answers.image_keys))
    if not axes:
        return None
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for about, answers in answer_sets:
        if not answers.image_keys:
            continue
        column = axes.index(about)
        for prompt, key, label in zip(answers.prompts, answers.image_keys, answers.labels):
            role = roles.get(key, "")
            group = groups.setdefault((prompt, role), {"prompt": prompt, "role": role, "seen": {},
                                                       "images": []})
            image = group["seen"].get(key)
            if image is None:
                group["seen"][key] = image = {"key": key, "labels": [None] * len(axes)}
                if cap is None or len(group["images"]) < cap:
                    group["images"].append(image)
            if image["labels"][column] is not None:
                continue  # asked twice (InterMit re-reads its prompts): the first answer
            label = int(label)
            if label >= 0:
                image["labels"][column] = answers.choices[label]
            elif label == FILTERED:
                image["mark"] = "filtered"
            elif label == ABSTAINED and image.get("mark") != "filtered":
                image["mark"] = "abstained"
    shown = list(groups.values())[:max_prompts]
    return {"axes": axes, "per_prompt": cap, "prompts": len(groups),
            "groups": [{"prompt": g["prompt"], "role": g["role"], "n": len(g["seen"]),
                        "images": g["images"]} for g in shown]}


def with_gallery(verdict: Verdict, sightings: Sightings | None) -> Verdict:
    """``verdict`` with the grid of what its judges saw (unchanged when they saw nothing)."""
    if sightings is None:
        return verdict
    gallery = gallery_figure(sightings.answers, sightings.roles)
    if gallery is None:
        return verdict
    return replace(verdict, figures={**verdict.figures, "gallery": gallery})


def unread_prompts(verdict: Verdict, unread: Mapping[str, str], *, strict: bool = False,
                   decisive: bool | Collection[str] = True) -> Verdict:
    """``verdict`` made inconclusive when its prompts had words the generator never read
    (``backends.vocabulary``): two unknown subjects read as the same ``<unk>`` give the same
    images, and a tight interval on them says nothing about either (issue #27). ``strict``
    (``--t2i-strict-prompts``), or a burden under which inconclusive passes: an
    ``UnreadPrompt`` error instead, so unread words are never a pass (issue #36). ``decisive``: which unread
    prompts decide that — all (True), none (False: prompts a search or an LLM chose, flagged
    in the figures only, since the check is about which prompts the model responds to, read
    or not), or those in a collection (the suite's own prompts, not the ones a method wrote
    around them, such as OpenBias' judge audit); every unread prompt is flagged."""
    if not unread:
        return verdict
    flagged = replace(verdict, figures={**verdict.figures, "unread_prompts": dict(unread)})
    if decisive is not True:
        unread = {prompt: why for prompt, why in unread.items()
                  if decisive is not False and prompt in decisive}
        if not unread:
            return flagged
    from .verdict import INCONCLUSIVE, passes

    said = "; ".join(f"{prompt!r}: {why}" for prompt, why in unread.items())
    if strict or passes(INCONCLUSIVE, verdict.burden):
        from .errors import UnreadPrompt

        # issue #36: where inconclusive passes (burden: check), a check on words the model
        # never read would pass having measured nothing: it cannot run instead
        why = "--t2i-strict-prompts" if strict else (
            "under burden: check an inconclusive check passes, and this one measured words "
            "the model never read; --t2i-strict-prompts says the same for every burden")
        raise UnreadPrompt(f"the generator cannot read its prompts whole: {said} ({why})")
    message = (f"inconclusive: the generator cannot read its prompts whole, so the figure is "
               f"about what it read instead: {said}\n{verdict.message}")
    return replace(flagged, outcome=INCONCLUSIVE, message=message)


def matrix_figure(matrix: ISMatrix | Mapping[str, Any]) -> dict[str, Any]:
    """``{axes, value, low, high}`` as lists of floats, NaN as None (JSON- and xdist-safe)."""
    if isinstance(matrix, Mapping):
        return {k: matrix[k] for k in ("axes", "value", "low", "high")}

    def plain(rows: np.ndarray) -> list[list[float | None]]:
        return [[None if math.isnan(v) else float(v) for v in row] for row in rows.tolist()]

    return {"axes": list(matrix.axes), "value": plain(matrix.value), "low": plain(matrix.low),
            "high": plain(matrix.high)}


# -- what a kind's chart draws: each figure it judged, with its interval ----------------------


@dataclass(frozen=True)
class Interval:
    """One line of an interval chart (``CheckKind.chart``: a verdict's figures -> these; the
    HTML report draws them against the limit); ``judged`` False: shown for context (grey)."""

    label: str
    value: float
    low: float
    high: float
    judged: bool = True
    tag: str = ""
    """Said before the label and never cut ("λ=0", "control")."""


@dataclass(frozen=True)
class Table:
    """A table of a paper's own figures (``CheckKind.tables``: a verdict's figures -> these;
    the HTML report draws each, every cell as text, never markup)."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


def number_text(value: Any, digits: int = 3) -> str:
    """A figure as a table cell: ``digits`` decimals, "—" for a missing or non-finite one."""
    number = _float(value)
    return "—" if math.isnan(number) else f"{number:.{digits}f}"


def interval_of(label: str, estimate: Any, judged: bool = True, tag: str = "") -> Interval:
    """A chart line from an estimate as the figures hold it (``{value, low, high}``)."""
    estimate = estimate if isinstance(estimate, Mapping) else {}
    value, low, high = (_float(estimate.get(k)) for k in ("value", "low", "high"))
    return Interval(label, value, low, high, judged, tag)


def mappings(items: Any) -> list[Mapping[str, Any]]:
    """The dicts of a figure's list (a hand-edited JSON report may hold anything)."""
    return [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) \
        else []


def _float(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return number if math.isfinite(number) else float("nan")
