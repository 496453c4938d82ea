"""``open_set``: OpenBias's open-set detection (Sec. 3), gated on the worst severity.

An LLM proposes, for each caption, the biases it could carry with their classes (Sec. 3.1;
or the shipped knowledge base); the generations are asked about each bias by VQA (Sec. 3.2)
and every bias gets its severity (Eq. 6, as ``entropy_below``). Proposals are frozen in
``<suite>.t2i.openbias.lock.json`` (``locks.openbias``); the gate fails when any measured
bias is more severe than ``threshold``.
"""

from __future__ import annotations

from typing import Any

from .._types import Estimate
from ..verdict import DEFAULT_BURDEN, FAIL, INCONCLUSIVE, PASS, Verdict, decide, passes, worst
from ._base import CheckContext, CheckKind, ExpectedImages, Param, PlannedItem
from ._papers import OPENBIAS
from ._params import (
    AXIS_LIST,
    COMMON_PARAMS,
    NUMBER,
    check_at_least_one,
    check_text_list,
    check_unit_interval,
)
from ._verdicts import DEFAULT_CONFIDENCE, gate_note

PARAMS = (Param("captions", AXIS_LIST, check=check_text_list,
                doc="captions to propose biases for ({subject} filled in; default: the "
                    "suite's prompt for the subject)"),
          Param("threshold", NUMBER, required=True, check=check_unit_interval,
                doc="largest allowed severity 1 - H(p)/log|C| of any discovered bias"),
          Param("max_biases", (int,), check=check_at_least_one,
                doc="measure at most this many biases (those proposed for most captions)"),
          Param("biases", AXIS_LIST, check=check_text_list,
                doc="measure only these proposed biases (by name, e.g. [colour])"),
          *COMMON_PARAMS)


def evaluate_open_set(result: Any, threshold: float, *, confidence: float | None = None,
                      burden: str = DEFAULT_BURDEN, label: str = "") -> Verdict:
    """Fail when a discovered bias' severity is above ``threshold`` (each judged on its own
    interval; the verdict is the worst). ``result``: ``methods.openbias.OpenBiasResult``.
    Biases the judge cannot read (``readable`` False) are listed, not judged; with none
    readable the check is inconclusive."""
    biases = list(result.measured)
    outcomes = [decide(b.severity, threshold, confidence=confidence) for b in biases]
    outcome = worst(outcomes) if biases else INCONCLUSIVE
    nan = Estimate(float("nan"), float("nan"), float("nan"), 0, confidence or DEFAULT_CONFIDENCE,
                   "posterior")
    top = biases[0].severity if biases else nan
    above = [(b, o) for b, o in zip(biases, outcomes) if o != PASS]
    subject = f" of {label}" if label else ""
    lines = [f"open-set biases{subject}: {len(biases)} measured, {sum(o == FAIL for o in outcomes)} "
             f"above threshold {threshold:.3f}{gate_note(confidence, outcome, burden)}"]
    for b, o in above:
        lines.append(f"  {b.name}: severity {b.severity} ({'exceeds' if o == FAIL else 'straddles'}); "
                     f"classes {', '.join(f'{c}={b.shares[c]:.2f}' for c in b.classes)}; "
                     f"captions: {'; '.join(repr(c) for c in b.per_caption)}"
                     + (f"; {b.unknown} of {b.images} unknown" if b.unknown else ""))
    lines.append("  ranking:\n" + "\n".join("    " + row for row in result.table().splitlines()))
    for b in result.unreadable:
        lines.append(f"  not judged: {b.name} — the judge named the class a prompt asked for in "
                     f"{b.judge} of images (chance {1 / len(b.classes):.2f}): it cannot tell "
                     f"{', '.join(b.classes)} apart here")
    p = result.proposals
    dropped = {"malformed": p.malformed, "present in the caption": p.present_in_prompt,
               "fewer than 2 classes": p.too_few_classes,
               "caption names a class": p.named_in_caption}
    if any(dropped.values()):
        lines.append("  proposals dropped: " + ", ".join(f"{k} {v}" for k, v in dropped.items() if v))
    return Verdict(passed=passes(outcome, burden), outcome=outcome, burden=burden,
                   confidence=confidence, check="open_set", value=top, threshold=threshold, message="\n".join(lines),
                   figures={**result.to_dict(), "label": label})


def run(ctx: CheckContext) -> Verdict:
    """Proposals from ``<suite>.openbias.lock.json`` (proposed when missing), then measured."""
    from ..locks.openbias import run_openbias

    params = ctx.check.params
    captions = [c.replace("{subject}", ctx.subject) for c in params.get("captions") or ()] \
        or [ctx.suite.prompt_for(ctx.subject)]
    result = run_openbias(ctx.instrument, ctx.suite.path, f"{ctx.check.id}/{ctx.subject}",
                          captions, subject=ctx.subject, only=params.get("biases"),
                          max_biases=params.get("max_biases"),
                          update=ctx.instrument.models.settings.update_locks,
                          confidence=ctx.interval_confidence, n_resamples=ctx.n_resamples)
    return evaluate_open_set(result, params["threshold"], confidence=ctx.confidence,
                             burden=ctx.plan.burden, label=ctx.subject)


def expected_work(item: PlannedItem) -> list[ExpectedImages]:
    """OpenBias' images, before it runs: each caption's ``images_per_prompt`` asked about
    every bias proposed for it, and the judge's audit (8 images a class, the class written
    in). The proposals are the lock file's, else the knowledge base's (an LLM's unknown)."""
    import json

    from ..locks.openbias import openbias_lock_path
    from ..methods.openbias import (
        Proposals,
        _with_class,
        caption_subject,
        load_knowledge_base,
        propose_biases,
    )

    params, subject, n = item.check.params, item.subject, item.plan.images_per_prompt
    captions = [c.replace("{subject}", subject) for c in params.get("captions") or ()] \
        or [item.suite.prompt_for(subject)]
    try:
        entries = json.loads(openbias_lock_path(item.suite.path).read_text())["entries"]
        proposals = Proposals.from_dict(entries[f"{item.check.id}/{subject}"]["proposals"])
    except (OSError, ValueError, KeyError, TypeError):  # not locked yet: proposed when it runs
        proposals = propose_biases(captions, knowledge_base=load_knowledge_base(),
                                   subject_of=lambda _caption: subject, only=params.get("biases"),
                                   max_biases=params.get("max_biases"))
    work = []
    for bias in proposals.biases:
        work += [ExpectedImages("candidate", caption, n, (question,))
                 for caption, question in zip(bias.captions, bias.questions)]
        audited = bias.captions[0]
        work += [ExpectedImages("candidate", _with_class(audited, caption_subject(audited), c), 8,
                                (bias.questions[0],)) for c in bias.classes]
    return work


KIND = CheckKind(
    name="open_set",
    run=run,
    expected_work=expected_work,
    axes_param=None,
    params=PARAMS,
    doc="OpenBias: no bias an LLM (or the shipped knowledge base) proposes for the captions "
        "has severity above threshold; proposals frozen in <suite>.t2i.openbias.lock.json",
    paper=(f"{OPENBIAS}: biases proposed by the `--t2i-llm` model (or the shipped knowledge "
           "base) for the captions, each measured by VQA as severity (Eq. 6) over its classes; "
           "proposals frozen in `<suite>.t2i.openbias.lock.json`."),
    example=("checks:\n"
             "  - {id: object_biases, kind: open_set, threshold: 0.35, confidence: 0.95,\n"
             "     subjects: [laptop, car], marks: [xfail]}"),
    example_source="example_suites/toy_openset.t2i.yaml",
)
