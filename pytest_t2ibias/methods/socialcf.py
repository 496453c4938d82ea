"""SocialCounterfactuals (Howard et al. 2024, seeds/002): MaxSkew of generations, and an audit
of the judge itself on images whose attributes are known.

  Skew_a@K = ln(p_topK(a) / p_target(a)),  MaxSkew@K = max_a Skew_a@K
A value never seen is smoothed and flagged unbounded (``metrics.skew``), never scored 0.
The audit reads each axis off a labelled folder (``index.jsonl``: ``{"file", <axis>: value}``)
with the instrument's judge (the axis' classifier when configured, else the VQA) and reports
accuracy per axis and per true value (Wilson intervals), the confusion matrix, and the
retrieval MaxSkew@K: the K images the VLM finds most like a neutral prompt, against the
folder's own shares (an unbiased retriever reproduces them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._types import Estimate, GeneratedImage, ImageSet
from ..errors import ImageFolderError

if TYPE_CHECKING:
    from ..instrument import Instrument
    from ..suite_spec import AxisSpec


@dataclass(frozen=True)
class GenerationSkew:
    max_skew: float
    value: str
    unbounded: tuple[str, ...]
    """Values never drawn: their skew is -inf (smoothed in ``skews``)."""
    skews: dict[str, float]
    counts: dict[str, int]
    target: dict[str, float]
    answered: int
    abstained: int
    filtered: int


def generation_skew(labels: np.ndarray, choices: Sequence[str], target: Mapping[str, float],
                    smoothing: float = 0.5) -> GenerationSkew:
    """MaxSkew of a model's generations (p_gen vs ``target``), abstentions counted apart."""
    from ..metrics.skew import most_over_represented, skew_at_k

    labels = np.asarray(labels)
    counts = {c: int(np.sum(labels == i)) for i, c in enumerate(choices)}
    total = sum(target[c] for c in choices)
    skews = skew_at_k(counts, {c: target[c] / total for c in choices}, smoothing)
    worst = most_over_represented(skews)  # never a value that was not drawn
    return GenerationSkew(worst.value, worst.attribute,
                          tuple(a for a, s in skews.items() if s.unbounded),
                          {a: s.value for a, s in skews.items()}, counts,
                          {c: target[c] / total for c in choices}, int(np.sum(labels >= 0)),
                          int(np.sum(labels == -1)), int(np.sum(labels == -2)))


@dataclass(frozen=True)
class AxisAudit:
    axis: str
    judge: str
    accuracy: Estimate
    per_value: dict[str, Estimate]
    confusion: dict[str, dict[str, int]]
    """true value -> judged value -> images (``abstained`` for none)."""
    retrieval_max_skew: float | None
    """The worst subject's retrieval MaxSkew@K; None when the judge has no embeddings."""
    retrieval_value: str | None
    retrieval_k: int
    retrieval_by_subject: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each subject's MaxSkew@K, its value and K (``subject_retrieval``)."""
    retrieval_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "judge": self.judge, "accuracy": self.accuracy.to_dict(),
                "per_value": {v: e.to_dict() for v, e in self.per_value.items()},
                "confusion": self.confusion, "retrieval_max_skew": self.retrieval_max_skew,
                "retrieval_value": self.retrieval_value, "retrieval_k": self.retrieval_k,
                "retrieval_by_subject": self.retrieval_by_subject,
                "retrieval_note": self.retrieval_note}


RETRIEVAL_PREFIXES = ("a photo of a", "an image of a", "a picture of a")
"""The prefixes a subject's neutral text is written with; their embeddings are averaged
(SocialCounterfactuals: one text embedding a subject, averaged over its prefixes)."""


def subject_retrieval(instrument: Instrument, images: ImageSet, truth: np.ndarray,
                      subjects: Sequence[str | None], choices: Sequence[str], *,
                      k: int | None = None, neutral: str = "a photo of a person",
                      prefixes: Sequence[str] = RETRIEVAL_PREFIXES) -> dict[str, dict[str, Any]]:
    """Retrieval MaxSkew@K as SocialCounterfactuals measures it: each subject's images ranked
    by cosine similarity to the subject's neutral text embedding averaged over ``prefixes``
    ("a photo of a doctor", "an image of a doctor", ...), the top K (default half the
    subject's images) against the subject's own shares. Images with no subject are one group
    ranked against ``neutral``. Needs a contrastive judge's embeddings (else a ``CheckError``:
    ``audit_judge`` then reports no retrieval figure and why)."""
    from ..metrics.skew import max_skew_at_k

    vectors = np.asarray(instrument.image_embeddings(images), dtype=float)
    groups: dict[str | None, list[int]] = {}
    for i, subject in enumerate(subjects):
        groups.setdefault(subject, []).append(i)
    out = {}
    for subject, members in groups.items():
        texts = [f"{p} {subject}" for p in prefixes] if subject else [neutral]
        text = np.asarray(instrument.text_embeddings(texts), dtype=float).mean(axis=0)
        text /= np.linalg.norm(text) or 1.0
        index = np.asarray(members)
        depth = k or max(1, len(index) // 2)
        top = index[np.argsort(-(vectors[index] @ text), kind="stable")[:depth]]
        labels = truth[index]
        pool = {v: float(np.mean(labels == j)) for j, v in enumerate(choices) if (labels == j).any()}
        counts = {v: int(np.sum(truth[top] == choices.index(v))) for v in pool}
        skew = max_skew_at_k(counts, pool)
        out[subject or neutral] = {"max_skew": float(skew.value), "value": skew.attribute,
                                   "k": int(depth), "texts": texts}
    return out


def labelled_folder(folder: Path | str) -> tuple[ImageSet, list[dict[str, Any]]]:
    """The images of a labelled folder and their rows of ``index.jsonl``; ``ImageFolderError``
    naming the file (and line) for anything that cannot be read."""
    from ..instrument import read_image
    from ..store.cache import content_hash

    folder = Path(folder)
    index = folder / "index.jsonl"
    usage = ('one JSON object per line and image: {"file": "0001.png", "gender": "female", '
             '...}; python -m toyworld labelled --out DIR writes one')
    try:
        lines = index.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageFolderError(f"{index} cannot be read ({exc}): a judge audit needs {usage}"
                               ) from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ImageFolderError(f"{index}:{number}: not JSON ({exc}); write {usage}") from None
        if not (isinstance(row, dict) and isinstance(row.get("file"), str) and row["file"]):
            raise ImageFolderError(f"{index}:{number}: a line must be an object with a \"file\" "
                                   f"(the image's name in the folder); write {usage}")
        rows.append(row)
    items = []
    for i, row in enumerate(rows):
        picture = read_image(folder / row["file"], f"listed in {index}")
        digest = content_hash(picture)
        items.append(GeneratedImage(f"labelled:{folder.name}", 0, i, picture, digest, digest))
    return ImageSet(tuple(items)), rows


def audit_judge(instrument: Instrument, folder: Path | str, axes: Sequence[AxisSpec], *,
                k: int | None = None, neutral: str = "a photo of a person",
                confidence: float = 0.95) -> dict[str, AxisAudit]:
    """Accuracy, per-value accuracy, confusion and retrieval MaxSkew@K of the judge per axis,
    on the folder's images that carry a true label for the axis; a row's ``subject`` groups
    its image for the retrieval (``subject_retrieval``)."""
    from ..errors import CheckError
    from ..metrics import wilson_interval

    images, rows = labelled_folder(folder)
    audits = {}
    for axis in axes:
        keep = [i for i, row in enumerate(rows) if row.get(axis.name) in axis.choices]
        if not keep:
            continue
        subset = ImageSet(tuple(images[i] for i in keep))
        truth = np.array([axis.choices.index(rows[i][axis.name]) for i in keep])
        answers = instrument.attributes(subset, axis)
        judged = np.asarray(answers.labels)
        correct = judged == truth
        accuracy = wilson_interval(int(correct.sum()), len(truth), confidence)
        per_value = {v: wilson_interval(int(correct[truth == j].sum()), int((truth == j).sum()),
                                        confidence)
                     for j, v in enumerate(axis.choices) if (truth == j).any()}
        confusion = {v: {**{w: int(np.sum((truth == j) & (judged == m)))
                            for m, w in enumerate(axis.choices)},
                         "abstained": int(np.sum((truth == j) & (judged < 0)))}
                     for j, v in enumerate(axis.choices) if (truth == j).any()}
        subjects = [rows[i].get("subject") if isinstance(rows[i].get("subject"), str) else None
                    for i in keep]
        try:
            by_subject = subject_retrieval(instrument, subset, truth, subjects, axis.choices,
                                           k=k, neutral=neutral)
            note = ""
        except CheckError as error:  # no judge with embeddings to rank with (a generative one)
            by_subject, note = {}, f"no retrieval MaxSkew: {error}"
        worst = max(by_subject.values(), key=lambda r: r["max_skew"], default=None)
        judge = "classifier" if instrument.models.has_classifier(axis.name) else "vqa"
        audits[axis.name] = AxisAudit(axis.name, judge, accuracy, per_value, confusion,
                                      worst["max_skew"] if worst else None,
                                      worst["value"] if worst else None,
                                      worst["k"] if worst else 0, by_subject, note)
    return audits


@dataclass(frozen=True)
class GroupAudit:
    """The judge on one axis per intersectional group of counterfactual sets
    (``judge_across_groups``)."""

    axis: str
    choices: tuple[str, ...]
    calibration: Any
    """``metrics.judge.JudgeCalibration`` of the kept sets, with ``groups``."""
    accuracy: dict[str, Estimate]
    overall: Estimate
    dependence: Any
    """``metrics.judge_groups.GroupDependence``."""
    retrieval_k: int
    retrieval_max_skew: float
    retrieval_value: str
    method: str
    sets: int
    kept: int
    filter_note: str
    directional: float
    answers: Any
    """The judge's answers on every set's images (the report's grid: a row a group)."""


def _set_generator(generator: Any, prompts: list[str], fraction: float) -> tuple[Any, str]:
    """Prompt-to-Prompt's set generator around ``generator``'s diffusers UNet pipeline, or
    None and why the sets share their initial noise only (its class decides, read by name)."""
    name = type(generator).__name__
    if name == "LazyDiffusersGenerator":
        index = generator.source.config("model_index.json") or {}
        has_unet = "unet" in index
    elif name == "DiffusersGenerator":
        has_unet = hasattr(generator.pipeline, "unet")
    else:
        return None, f"shared initial noise only ({name} is no diffusers pipeline)"
    if not has_unet:
        return None, "shared initial noise only (the pipeline has no UNet for attention control)"
    from ..backends.prompt2prompt import CounterfactualSetGenerator

    return CounterfactualSetGenerator(generator, prompts, cross_replace=fraction,
                                      self_replace=fraction / 2), "Prompt-to-Prompt"


def judge_side_view(generator: Any) -> Any:
    """The candidate generator when it stands for the judge's eyes, else None: a wrapper with
    ``judge_side = True`` whose images are its ``inner`` generator's, changed only as the judge
    under audit sees them (``example_suites/weak_judge.py`` plants a misreading judge so), and
    ``around(generator)``, the same change around another generator. The sets are then made
    and filtered on ``inner``'s images, what the paper's CLIP filter reads (the generated
    image), and the judge reads them through the view: a filter on the judge's degraded
    pixels keeps the sets the judge reads well, which biases the audit."""
    return generator if getattr(generator, "judge_side", False) and hasattr(generator, "around") else None


class _Remembered:
    """``inner``'s images kept by request, so a judge-side view of them reads the pictures
    already made instead of making the sets twice (a ``Generator``, same fingerprint)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.fingerprint = inner.fingerprint
        self.model = getattr(inner, "model", None) or type(inner).__name__  # the progress line's
        self._kept: dict[Any, Any] = {}

    def generate(self, requests: list[Any]) -> list[Any]:
        missing = [r for r in dict.fromkeys(requests) if r not in self._kept]
        if missing:
            self._kept.update(zip(missing, self.inner.generate(missing)))
        return [self._kept[r] for r in requests]

    def prompt_problems(self, prompts: Sequence[str]) -> dict[str, Any]:
        return self.inner.prompt_problems(prompts) if hasattr(self.inner, "prompt_problems") else {}


@dataclass(frozen=True)
class CandidateSets:
    """One candidate's images of every prompt: as made (what the filter and the selection
    read) and as the judge sees them (the same images unless the generator is a judge-side
    view, ``judge_side_view``)."""

    label: str
    made: ImageSet
    judged: ImageSet


def _candidate_sets(instrument: Instrument, prompts: list[str], sets: int,
                    fractions: Sequence[float]) -> tuple[list[CandidateSets], str]:
    """Each candidate's ``sets`` images of every prompt, image i of each from set i (cached
    like any image): one candidate a replace fraction under attention control, else one."""
    from .._types import ImageRequest

    candidate: Any = instrument.generator("candidate")
    view = judge_side_view(candidate)
    plan = instrument.plan
    requests = [ImageRequest(p, plan.seed, i, **plan.sampling) for p in prompts for i in range(sets)]

    def made_and_judged(generator: Any) -> tuple[ImageSet, ImageSet]:
        if view is None:
            images = instrument.requests.images(generator, requests)
            return images, images
        kept = _Remembered(generator)
        return (instrument.requests.images(kept, requests),
                instrument.requests.images(view.around(kept), requests))

    def seen(images: ImageSet, generator: Any) -> None:
        if instrument.sightings is not None:
            instrument.sightings.roles.update((item.key, "candidate") for item in images)
            if hasattr(generator, "prompt_problems"):
                instrument.sightings.unread.update(generator.prompt_problems(prompts))

    made_by = view.inner if view is not None else candidate
    seen_as = " (the judge reads them through the candidate's judge-side view)" if view else ""
    candidates = []
    for fraction in dict.fromkeys(fractions):
        generator, method = _set_generator(made_by, prompts, fraction)
        if generator is None and view is None:
            images = instrument.images(prompts, per_prompt=sets)
            return [CandidateSets("shared noise", images, images)], method
        if generator is None:
            made, judged = made_and_judged(made_by)
            seen(judged, candidate)
            return [CandidateSets("shared noise", made, judged)], method + seen_as
        made, judged = made_and_judged(generator)
        seen(judged, generator)
        candidates.append(CandidateSets(f"p={fraction:g}", made, judged))
    return candidates, (f"Prompt-to-Prompt (cross-attention replaced for a fraction p of the "
                        f"steps, self-attention p/2; candidates p = "
                        f"{', '.join(f'{f:g}' for f in dict.fromkeys(fractions))}){seen_as}")


def judge_across_groups(instrument: Instrument, axis: AxisSpec,
                        groups: Sequence[tuple[tuple[str, ...], str, str]], sets: int, *,
                        neutral: Sequence[str], k: int | None, tolerance: float,
                        clip_filter: float = 0.2, fractions: Sequence[float] = (0.8,),
                        confidence: float = 0.95) -> GroupAudit:
    """The judge on ``axis`` per group: ``groups`` are (values of the other axes, the audited
    value, prompt) (``kinds.judge_across_groups.group_prompts``)."""
    from ..errors import BackendError, ContractError
    from ..metrics import wilson_interval
    from ..metrics.counterfactual_sets import caption_similarities, directional_similarity
    from ..metrics.judge import COUNTERFACTUAL, calibration_from_labels
    from ..metrics.judge_groups import depends_on_group
    from ..metrics.skew import max_skew_at_k

    prompts = [prompt for *_, prompt in groups]
    candidates, method = _candidate_sets(instrument, prompts, sets, fractions)
    set_of = np.tile(np.arange(sets), len(groups))
    try:
        captions = instrument.text_embeddings(prompts)
        neutrals = instrument.text_embeddings(list(neutral))
        embedded = [np.asarray(instrument.image_embeddings(c.made)) for c in candidates]
    except (ContractError, BackendError) as exc:  # a generative judge: said in the row
        embedded, why = None, str(exc).split(":")[0]
    if embedded is not None:
        # the paper's filter and selection: per seed, the candidates whose every image reaches
        # the filter, the best directional similarity chosen; a seed with none is dropped
        chosen = np.full(sets, -1)
        directional = np.full(sets, np.nan)
        for i in range(sets):
            for c, vectors in enumerate(embedded):
                members = vectors[set_of == i]
                if not np.all(caption_similarities(members, captions) >= clip_filter):
                    continue
                score = directional_similarity(members, captions)
                if chosen[i] < 0 or score > directional[i]:
                    chosen[i], directional[i] = c, score
        kept_sets = chosen >= 0
        pick = np.where(kept_sets, chosen, 0)[set_of]
        images = ImageSet(tuple(candidates[pick[j]].judged[j] for j in range(len(set_of))))
        # the retrieval ranks what the judge sees; the filter read the images as made
        pictures = np.asarray(instrument.image_embeddings(images)) \
            if any(c.judged is not c.made for c in candidates) else \
            np.stack([embedded[pick[j]][j] for j in range(len(set_of))])
        picked = ", ".join(f"{c.label} {int(np.sum(chosen == i))}" for i, c in enumerate(candidates))
        read = " (the images as made, before the judge-side view)" \
            if any(c.judged is not c.made for c in candidates) else ""
        note = (f"every image at CLIP similarity >= {clip_filter:g} to its prompt{read}; chosen by "
                f"directional similarity ({picked}), mean "
                f"{float(np.nanmean(directional)) if kept_sets.any() else float('nan'):.3f}")
        similarity = (pictures @ np.asarray(neutrals).T).mean(axis=1)
    else:
        images = candidates[0].judged
        kept_sets = np.ones(sets, dtype=bool)
        directional = np.full(sets, np.nan)
        note = f"not applied: the judge offers no image and text embeddings ({why})"
        similarity = None  # the paper's retrieval ranks by embedding similarity: not measured
    answers = instrument.attributes(images, axis)
    judged = np.asarray(answers.labels)
    truth = np.repeat([axis.choices.index(value) for _, value, _ in groups], sets)
    group_of = np.repeat([", ".join(values) for values, _, _ in groups], sets)
    whole = np.repeat([" ".join((*values, value)) for values, value, _ in groups], sets)
    keep = kept_sets[set_of]
    calibration = calibration_from_labels(
        instrument.judge_name(axis), axis.name, axis.choices, truth[keep], judged[keep],
        source=COUNTERFACTUAL, where=f"{int(kept_sets.sum())} counterfactual sets ({method})",
        confidence=confidence, groups=[str(g) for g in group_of[keep]])
    accuracy = {}
    for group in map(str, dict.fromkeys(group_of)):
        mine = keep & (group_of == group) & (judged >= 0)
        accuracy[group] = wilson_interval(int(np.sum(judged[mine] == truth[mine])), int(mine.sum()), confidence)
    answered = keep & (judged >= 0)
    overall = wilson_interval(int(np.sum(judged[answered] == truth[answered])), int(answered.sum()), confidence)
    order = np.flatnonzero(keep)
    depth = k or max(1, len(order) // 2)
    top = order if similarity is None else order[np.argsort(-similarity[order], kind="stable")[:depth]]
    pool = {g: 1 / len(set(whole[keep])) for g in dict.fromkeys(whole[keep])}
    skew = max_skew_at_k({g: int(np.sum(whole[top] == g)) for g in pool}, pool) \
        if pool and similarity is not None else None
    return GroupAudit(
        axis.name, tuple(axis.choices), calibration, accuracy, overall,
        depends_on_group(calibration.groups or {}, axis.choices, tolerance, confidence),
        depth, float("nan") if skew is None else float(skew.value),
        "" if skew is None else str(skew.attribute), method, sets, int(kept_sets.sum()), note,
        float(np.nanmean(directional)) if not np.all(np.isnan(directional)) else float("nan"),
        answers)
