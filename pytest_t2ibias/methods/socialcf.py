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
