"""A validated suite: the objects the YAML loader produces and the checks consume."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .params import Params


@dataclass(frozen=True)
class Location:
    """Where a spec element was written: file and 1-based line, for error messages."""

    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class QuestionPart:
    """One yes/no part of a multi-part axis (disability: blind? hearing aid? wheelchair?).

    ``statements`` (``{"yes": caption, "no": caption}``) let a contrastive VQA answer it.
    """

    value: str
    question: str
    statements: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AxisSpec:
    """A bias axis: how to read it off an image and what unbiased looks like.

    ``ideal`` is "uniform", a mapping choice -> share (summing to 1), or
    ``{"reference": Path}`` (a folder of real images measured with the same extractor).
    ``parts`` + ``none_value`` describe a multi-part axis: the value is the part answered
    yes most surely, ``none_value`` when every part is answered no, an abstention when no
    part is a yes and one was unread (or below ``abstain_below``).
    ``statements`` maps each choice to a caption for contrastive VQA ("a photo of a man");
    ``classifier`` asks for the attribute classifier (``--t2i-classifier``) on this axis.
    ``counterfactuals_from_llm`` (``counterfactuals: llm``): the per-value prompts are chosen
    by the language model and frozen in the suite's lock file (``pytest_t2ibias.locks.counterfactual``);
    ``counterfactuals`` stays empty until the facade fills it in for one subject.
    ``phrases`` says how a value is written in a prompt when not as the choice itself.
    """

    name: str
    question: str
    choices: tuple[str, ...]
    counterfactuals: dict[str, str] = field(default_factory=dict)
    ideal: Any = "uniform"
    ordered: bool = False
    parts: tuple[QuestionPart, ...] = ()
    none_value: str | None = None
    location: Location | None = None
    statements: dict[str, str] = field(default_factory=dict)
    classifier: bool = False
    counterfactuals_from_llm: bool = False
    phrases: dict[str, str] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    """More words that name a value of this axis ("man", "grandmother"): BGPS drops found
    prompts containing any of them, its choices or their phrases."""
    calibration: str | None = None
    """``judge_calibration:`` where the judge's confusion on this axis is measured: a labelled
    folder (a path, relative to the suite: ``index.jsonl`` with ``{file, <axis>: value}``),
    ``counterfactual`` (the axis' counterfactual images, labelled by their prompt; the default
    when the axis has counterfactuals) or ``none``."""
    abstain_below: float | None = None
    """``abstain_below:`` the judge abstains on an image whose most probable answer on this
    axis is below this probability (None: the run's ``--t2i-abstain-below``, else never)."""

    @property
    def calibration_source(self) -> str | None:
        """``counterfactual``, a folder path, or None (no calibration)."""
        if self.calibration == "none":
            return None
        if self.calibration is None:
            has_counterfactuals = bool(self.counterfactuals) or self.counterfactuals_from_llm
            return COUNTERFACTUAL_CALIBRATION if has_counterfactuals else None
        return self.calibration

    def phrase(self, value: str) -> str:
        """How ``value`` is written in a prompt ("middle-aged", "working outdoors")."""
        return self.phrases.get(value, value)


COUNTERFACTUAL_CALIBRATION = "counterfactual"
"""``judge_calibration: counterfactual``: the judge is calibrated on the axis' counterfactual
images ("a photo of a female doctor" labelled female)."""


@dataclass(frozen=True)
class FilterSpec:
    """Images answered anything but ``keep`` are filtered out (and counted)."""

    question: str
    choices: tuple[str, ...]
    keep: str
    statements: dict[str, str] = field(default_factory=dict)
    location: Location | None = None


@dataclass(frozen=True)
class CheckSpec:
    """One entry of ``checks:``; ``params`` its keys, validated, as its kind's ``Params``."""

    id: str
    kind: str
    params: Params
    axes: tuple[str, ...]
    subjects: tuple[str, ...]
    location: Location
    marks: tuple[str, ...] = ()


@dataclass(frozen=True)
class SuiteDefaults:
    """``defaults:``, how every check of the suite samples unless the check or the command
    line says otherwise (``plan.plan_for`` decides); None: not set. Its fields are the keys
    of ``suite.language.DEFAULTS``, where each is documented and its value's rule declared."""

    images_per_prompt: int | dict[str, int] | None = None
    """A number, or ``{"max": N}``: adaptive for the gated checks that can stop early."""
    seed: int | None = None
    steps: int | None = None
    guidance: float | None = None
    height: int | None = None
    width: int | None = None
    batch_size: int | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    prompt: str
    subjects: tuple[str, ...]
    axes: dict[str, AxisSpec]
    checks: tuple[CheckSpec, ...]
    filter: FilterSpec | None = None
    defaults: SuiteDefaults = field(default_factory=SuiteDefaults)
    location: Location | None = None
    models: dict[str, str] = field(default_factory=dict)
    """``models:`` role ("candidate", "baseline") -> model id or path (resolved against the
    suite file). Precedence: command line > suite ``models:`` > ini."""
    model_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``models.<role>.options``: loading keywords for that role's ``from_pretrained``, used
    with the suite's model only (``--t2i-model-option`` wins key by key)."""
    burden: str | None = None
    """``burden:`` who must prove its case when an interval straddles a limit (``model`` or
    ``check``); None: the command line's or the default (``verdict.DEFAULT_BURDEN``)."""
    protocol: str | None = None
    """``protocol:`` gate or paper (``_settings.PROTOCOLS``); None: the command line's or gate."""
    judge_correction: str | None = None
    """``judge_correction:`` on, full or off (``_settings.JUDGE_CORRECTIONS``); None: the
    command line's or on."""
    confidence: float | None = None
    """``confidence:`` the level every check that sets none gates at (the loader has already
    put it in those checks' ``params``); None: each check's own, else a point decision."""

    def prompt_for(self, subject: str) -> str:
        return self.prompt.format(subject=subject)

    def require_phrased(self, axes: Sequence[str]) -> None:
        """Refuse ``counterfactuals: llm`` axes whose prompts were not filled in from the lock
        file, rather than silently treating them as axes without counterfactuals."""
        unphrased = [name for name in axes if self.axes[name].counterfactuals_from_llm
                     and not self.axes[name].counterfactuals]
        if unphrased:
            raise ValueError(f"axes {unphrased} of {self.path} have counterfactuals: llm; fill "
                             "them in for the subject from the suite's lock file first "
                             "(T2IBias.counterfactual_suite(suite, subject))")
