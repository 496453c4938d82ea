"""The texts a judge scores, checked like prompts (issue #36).

A CLIP-style judge compares each image with one statement per choice (the axis' or
filter's ``statements:``, else ``"a photo of a {choice}"``); a generative one scores each
choice after the question. When its tokenizer reads two of a question's statements as the
same tokens (``"a photo of a yes"`` and ``"a photo of a no"``, both ``a photo of a <unk>``
to the toy CLIP), no image can make it prefer one: every answer is 50/50, which used to
surface after generation as a "degenerate judge". Here it is a suite error at collection,
naming the axis and what the tokenizer made of the statements, before any image is made.
Words it cannot read in statements that stay distinct are a warning.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..suite_spec import Location, Suite
    from .readings import TokenizerReader

DEFAULT_TEMPLATE = "a photo of a {choice}"
"""What a CLIP-style judge compares an image with for a choice without a statement."""
CONTRASTIVE_MODEL_TYPES = frozenset({"clip", "siglip", "siglip2", "altclip", "chinese_clip"})


class JudgeTextWarning(UserWarning):
    """A judge's tokenizer cannot read every word of a statement it scores."""


@dataclass(frozen=True)
class ScoredQuestion:
    """One question a judge answers, as the texts it scores (one per choice)."""

    about: str
    """``axis 'gender'``, ``the filter``, ``axis 'disability', part 'wheelchair'``."""
    key: str
    """Where the suite gives its statements, for the advice (``axes.gender.statements``)."""
    choices: tuple[str, ...]
    texts: tuple[str, ...]
    location: Location | None = None


def is_contrastive(model: str | os.PathLike[str] | None) -> bool | None:
    """Whether a judge folder is CLIP-style (its ``config.json``'s ``model_type``); None when
    it cannot be told without a download (a hub id, no config)."""
    try:
        config = json.loads((Path(model) / "config.json").read_text()) if model else None
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or "model_type" not in config:
        return None
    return config["model_type"] in CONTRASTIVE_MODEL_TYPES


def scored_questions(suite: Suite, *, contrastive: bool, classified: Collection[str] = ()
                     ) -> list[ScoredQuestion]:
    """The questions of ``suite`` a VQA judge answers (axes read by a ``--t2i-classifier``,
    ``classified``, are not), each with the texts it scores."""

    def texts(question: str, choices: Sequence[str], statements: dict[str, str]) -> tuple[str, ...]:
        if contrastive:
            return tuple(statements.get(c) or DEFAULT_TEMPLATE.format(choice=c) for c in choices)
        return tuple(f"{question} {choice}" for choice in choices)

    found = []
    if suite.filter is not None:
        f = suite.filter
        found.append(ScoredQuestion("the filter", "filter.statements", f.choices,
                                    texts(f.question, f.choices, f.statements),
                                    getattr(f, "location", None)))
    for name, axis in suite.axes.items():
        if name in classified or axis.classifier:
            continue
        if axis.parts:
            for part in axis.parts:
                found.append(ScoredQuestion(
                    f"axis {name!r}, part {part.value!r}", f"axes.{name}.parts[{part.value}].statements",
                    ("yes", "no"), texts(part.question, ("yes", "no"), part.statements),
                    axis.location))
            continue
        found.append(ScoredQuestion(f"axis {name!r}", f"axes.{name}.statements", axis.choices,
                                    texts(axis.question, axis.choices, axis.statements),
                                    axis.location))
    return found


def same_readings(question: ScoredQuestion, reader: TokenizerReader, judge: str) -> str | None:
    """Why the judge cannot tell ``question``'s choices apart, or None when it can."""
    readings = reader.readings(question.texts)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, text in enumerate(question.texts):
        groups.setdefault(readings[text].ids, []).append(i)
    same = next((group for group in groups.values() if len(group) > 1), None)
    if same is None:
        return None
    shown = readings[question.texts[same[0]]].shown
    listed = " and ".join(f"{question.choices[i]!r} ({question.texts[i]!r})" for i in same)
    return (f"{question.about}: the judge {judge} cannot tell {listed} apart: its tokenizer "
            f"reads each as {shown!r}, so every image would score them the same. Give "
            f"{question.key} one statement per choice in words the judge's tokenizer knows "
            f"(e.g. {{{question.choices[same[0]]}: \"a photo of a person\", ...}})"
            + (", or judge the axis with a --t2i-classifier" if question.about.startswith("axis")
               else ""))


def unread_in_statements(question: ScoredQuestion, reader: TokenizerReader, judge: str
                         ) -> str | None:
    """The words of ``question``'s texts the judge's tokenizer cannot read, in one line."""
    from .readings import problems

    said = problems([reader], question.texts)
    if not said:
        return None
    return (f"{question.about}: the judge {judge} cannot read all it scores: "
            + "; ".join(f"{text!r}: {why}" for text, why in said.items()))
