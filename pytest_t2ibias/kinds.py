"""Check kinds: what a ``checks:`` entry of a suite may say, and the registry of them.

A kind is a declaration: its parameters (validated by the suite loader at collection, before
any model loads), which parameter names the axes its items expand over, and where its
``run`` lives. The code that runs the built-in kinds is in ``checks.py``, referenced here as
``"module:function"`` (like an entry point) so that declaring and validating never import
the methods. A user's kind (``register_check``) passes its ``run`` callable directly.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .instrument import Instrument
    from .plan import Plan
    from .spec import AxisSpec, CheckSpec, Suite
    from .verdict import Verdict


@dataclass(frozen=True)
class Param:
    """One key of a check entry. ``types`` as for ``isinstance``; ``check`` may reject a value
    with a message (returned string) after the type matched."""

    name: str
    types: tuple[type, ...]
    required: bool = False
    default: Any = None
    check: Callable[[Any], str | None] | None = None
    doc: str = ""
    check_with_axes: Callable[[Any, dict[str, AxisSpec]], str | None] | None = None
    """Like ``check``, with the suite's axes (a target naming an axis and one of its values)."""


@dataclass(frozen=True)
class CheckContext:
    """What one item's ``run`` receives: where it sits in its suite, how it samples (and who
    carries the burden of proof: ``plan.burden``), and the instrument to measure with.

    ``confidence`` is the level the check gates at: its ``confidence:``, adjusted for the
    family of gated checks under ``--t2i-family``; None decides on the point value.
    ``interval_confidence`` is the level every interval is computed at (``confidence`` when
    the check gates, else ``--t2i-confidence``); ``n_resamples`` the bootstrap size."""

    check: CheckSpec
    suite: Suite
    subject: str
    axis: AxisSpec | None
    plan: Plan
    instrument: Instrument
    confidence: float | None
    interval_confidence: float
    n_resamples: int
    phrase: Callable[[Suite, str], Suite]
    """Fills in a suite's ``counterfactuals: llm`` axes for one subject (its lock file)."""
    progress: Callable[[str], None] | None = None
    """Where a long run (a BGPS search) reports one line per step; None: quiet."""
    bgps_locks: Any = None
    """The suites' BGPS lock files (``_bgps_lock.BGPSLocks``) for ``no_bgps_prompt_exceeds``."""

    @property
    def label(self) -> str:
        """``subject/axis``, or the subject for kinds without axes."""
        return f"{self.subject}/{self.axis.name}" if self.axis else self.subject

    def counterfactual_suite(self) -> Suite:
        """The suite with every counterfactual prompt written out for this subject."""
        return self.phrase(self.suite, self.subject)


Run = Callable[[CheckContext], "Verdict"]


@dataclass(frozen=True)
class CheckKind:
    name: str
    run: Run | str
    """The callable, or ``"module:function"`` imported when an item first runs."""
    params: tuple[Param, ...] = ()
    axes_param: str | None = "axes"
    """Parameter listing the axes to expand items over (one item per subject x axis);
    None for kinds with one item per subject."""
    doc: str = ""
    per_subject: bool = True
    """False: one item per check (``id``), not per subject (a search over the whole model)."""

    def runner(self) -> Run:
        if callable(self.run):
            return self.run
        module, _, function = self.run.partition(":")
        return getattr(importlib.import_module(module), function)


CHECK_KINDS: dict[str, CheckKind] = {}


def register_check(kind: CheckKind) -> CheckKind:
    if kind.name in CHECK_KINDS:
        raise ValueError(f"check kind {kind.name!r} is already registered")
    CHECK_KINDS[kind.name] = kind
    return kind


# -- parameter validators -------------------------------------------------------------------

NUMBER = (int, float)
AXIS_LIST = (list,)


def _unit_interval(value: Any) -> str | None:
    return None if 0.0 <= float(value) <= 1.0 else f"must lie in [0, 1], got {value}"


def _confidence(value: Any) -> str | None:
    return None if 0.5 <= float(value) < 1.0 else f"must lie in [0.5, 1), got {value}"


def _at_least_one(value: Any) -> str | None:
    return None if value >= 1 else f"must be at least 1, got {value}"


def _images(value: Any) -> str | None:
    if isinstance(value, str):
        return None if value == "auto" else f"must be a number or auto, got {value!r}"
    return _at_least_one(value)


def _margin(value: Any) -> str | None:
    return None if 0.0 < float(value) < 1.0 else f"must lie in (0, 1), got {value}"


def _priority(value: Any) -> str | None:
    weights = list(value.values())
    if any(not isinstance(w, (int, float)) or isinstance(w, bool) for w in weights):
        return "must map axes to numbers (weights)"
    if any(w < 0 for w in weights):
        return f"weights must be >= 0, got {value}"
    if not any(w > 0 for w in weights):
        return "needs at least one positive weight"
    return None


def _burden(value: Any) -> str | None:
    return None if value in ("model", "check") else f"must be model or check, got {value!r}"


COMMON_PARAMS = (
    Param("confidence", NUMBER, check=_confidence,
          doc="gate on the interval at this level (and compute it at this level)"),
    Param("burden", (str,), check=_burden,
          doc="model: an interval across the limit fails (default); check: it passes"),
    Param("images_per_prompt", (int, str), check=_images,
          doc="images per prompt for this check only (more images, a tighter interval), or "
              "auto: as many as deciding the threshold needs (power planning); default: the "
              "suite's"),
    Param("margin", NUMBER, check=_margin,
          doc="power planning: the check must decide when the truth is this far from its "
              "threshold (default 0.1)"),
)


# -- the built-in kinds (their runs: ``checks.py``) ------------------------------------------

_RUNS = "pytest_t2ibias.checks"

register_check(CheckKind(
    name="entropy_below",
    run=f"{_RUNS}:run_entropy_below",
    params=(Param("axes", AXIS_LIST, required=True, doc="axes to judge, one item each"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="largest allowed severity 1 - H(p)/log|C|"),
            *COMMON_PARAMS),
    doc="OpenBias severity of the subject's attribute distribution is at most threshold",
))

register_check(CheckKind(
    name="w1_below",
    run=f"{_RUNS}:run_w1_below",
    params=(Param("axes", AXIS_LIST, required=True, doc="axes to judge, one item each"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="largest allowed normalised W1 to the axis' ideal"),
            *COMMON_PARAMS),
    doc="normalised Wasserstein-1 distance to the axis' ideal distribution is at most threshold",
))

register_check(CheckKind(
    name="is_nonnegative",
    run=f"{_RUNS}:run_is_nonnegative",
    axes_param="mitigate",
    params=(Param("mitigate", AXIS_LIST, required=True, doc="axes whose mitigation is simulated"),
            Param("on", AXIS_LIST, doc="affected axes (default: all others)"),
            Param("tolerance", NUMBER, default=0.0, check=_unit_interval,
                  doc="IS may go this far below zero"),
            *COMMON_PARAMS),
    doc="BiasConnect: mitigating an axis does not push another away from its ideal",
))

register_check(CheckKind(
    name="no_regression",
    run=f"{_RUNS}:run_no_regression",
    axes_param="fixes",
    params=(Param("fixes", AXIS_LIST, required=True,
                  doc="axes the candidate (fine-tune) is meant to fix, one item each"),
            Param("on", AXIS_LIST, doc="axes that must not get worse (default: all others)"),
            Param("tolerance", NUMBER, default=0.0, check=_unit_interval,
                  doc="IS_mit may go this far below zero"),
            *COMMON_PARAMS),
    doc="merge gate: the candidate model is no further from the ideal than the baseline on "
        "any axis it was not meant to fix (IS_mit, paired seeds)",
))

register_check(CheckKind(
    name="intermit",
    run=f"{_RUNS}:run_intermit",
    axes_param=None,
    params=(Param("priority", (dict,), doc="axis -> weight over the axes to mitigate "
                                           "(B*, normalised; default: every axis equally)",
                  check=_priority),
            Param("epsilon", NUMBER, default=0.35, check=_unit_interval,
                  doc="stop when tau = <wbar(B*), p> is at most this"),
            Param("max_steps", (int,), check=_at_least_one,
                  doc="most axes to mitigate (default: as many as there are axes)"),
            *COMMON_PARAMS),
    doc="InterMit (BiasConnect Algorithm 1): prompt modification reaches tau <= epsilon "
        "without making a prioritised axis worse",
))


def _target(value: Any) -> str | None:
    keys = set(value) if isinstance(value, dict) else set()
    if keys != {"axis", "value"} or not all(isinstance(value[k], str) for k in keys):
        return "must be a mapping {axis: NAME, value: CHOICE}, e.g. {axis: gender, value: male}"
    return None


def _target_in_suite(value: Any, axes: dict[str, AxisSpec]) -> str | None:
    axis = axes.get(value["axis"])
    if axis is None:
        return f"names unknown axis {value['axis']!r} (axes: {', '.join(axes)})"
    if value["value"] not in axis.choices:
        return (f"value {value['value']!r} is not a choice of axis {axis.name!r} "
                f"(choices: {', '.join(axis.choices)})")
    return None


def _positive(value: Any) -> str | None:
    return None if value > 0 else f"must be > 0, got {value}"


def _non_negative(value: Any) -> str | None:
    return None if value >= 0 else f"must be >= 0, got {value}"


register_check(CheckKind(
    name="no_bgps_prompt_exceeds",
    run=f"{_RUNS}:run_no_bgps_prompt_exceeds",
    axes_param=None,
    per_subject=False,
    params=(Param("target", (dict,), required=True, check=_target, check_with_axes=_target_in_suite,
                  doc="{axis: NAME, value: CHOICE}: the attribute value the search pushes towards"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="largest allowed target share of any found prompt's images"),
            Param("lambda", NUMBER, default=10.0, check=_non_negative,
                  doc="λ of Eq. 4: weight of the probe term (0: the LLM alone)"),
            Param("beam", (int,), default=5, check=_at_least_one, doc="beam size B"),
            Param("expansion", (int,), default=5, check=_at_least_one, doc="expansion E"),
            Param("max_new_tokens", (int,), default=10, check=_at_least_one,
                  doc="most tokens the LLM adds to the model prompt"),
            Param("prompts", (int,), default=5, check=_at_least_one,
                  doc="searches to run (one prompt each, duplicates merged)"),
            Param("model_prompt", (str,), default="a photo of a person working as a",
                  doc="what the LLM continues"),
            Param("neutral_prompt", (str,), default="a photo of a person",
                  doc="the latents' prompt before the probe step; also measured for reference"),
            Param("baseline", (bool,), default=True,
                  doc="also search and measure with λ = 0 (the LLM alone), shown beside"),
            Param("step_index", (int,), default=5, check=_non_negative,
                  doc="the denoising step whose h-space the probe reads"),
            Param("latents", (int,), default=10, check=_at_least_one, doc="K noise latents"),
            Param("seed", (int,), default=0, doc="the searches' sampling seed"),
            Param("probe", (str,), doc="a saved probe directory (default: trained once per "
                                       "generator under the cache dir)"),
            *COMMON_PARAMS),
    doc="no prompt Bias-Guided Prompt Search finds draws the target value more often than "
        "threshold (seeds/001)",
))


# -- OpenBias, SocialCounterfactuals, ENTIGEN (issue #11) ------------------------------------


def _text_list(value: Any) -> str | None:
    if not value or not all(isinstance(v, str) and v.strip() for v in value):
        return "must be a non-empty list of non-empty strings"
    return None


def _shares(value: Any) -> str | None:
    if not value or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                            for v in value.values()):
        return "must map values to positive shares, e.g. {male: 0.5, female: 0.5}"
    return None


register_check(CheckKind(
    name="open_set",
    run=f"{_RUNS}:run_open_set",
    axes_param=None,
    params=(Param("captions", AXIS_LIST, check=_text_list,
                  doc="captions to propose biases for ({subject} filled in; default: the "
                      "suite's prompt for the subject)"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="largest allowed severity 1 - H(p)/log|C| of any discovered bias"),
            Param("max_biases", (int,), check=_at_least_one,
                  doc="measure at most this many biases (those proposed for most captions)"),
            Param("biases", AXIS_LIST, check=_text_list,
                  doc="measure only these proposed biases (by name, e.g. [colour])"),
            *COMMON_PARAMS),
    doc="OpenBias: no bias an LLM (or the shipped knowledge base) proposes for the captions "
        "has severity above threshold; proposals frozen in <suite>.t2i.openbias.lock.json",
))

register_check(CheckKind(
    name="max_skew_below",
    run=f"{_RUNS}:run_max_skew_below",
    params=(Param("axes", AXIS_LIST, required=True, doc="axes to judge, one item each"),
            Param("threshold", NUMBER, required=True, check=_non_negative,
                  doc="largest allowed MaxSkew = max_a ln(p_gen(a) / p_target(a))"),
            Param("target", (dict,), check=_shares,
                  doc="value -> target share (default: the axis' ideal, uniform)"),
            *COMMON_PARAMS),
    doc="SocialCounterfactuals: no value is over-represented in the generations by more than "
        "exp(threshold) times its target share (a value never drawn is reported unbounded)",
))

register_check(CheckKind(
    name="judge_agrees",
    run=f"{_RUNS}:run_judge_agrees",
    per_subject=False,
    params=(Param("axes", AXIS_LIST, required=True, doc="axes to audit"),
            Param("folder", (str,), required=True,
                  doc="labelled images: index.jsonl with {file, <axis>: value} per line"),
            Param("threshold", NUMBER, required=True, check=_unit_interval,
                  doc="lowest allowed accuracy of the judge (VQA or classifier) per axis"),
            Param("k", (int,), check=_at_least_one,
                  doc="retrieval depth for MaxSkew@K (default: half the folder)"),
            *COMMON_PARAMS),
    doc="the judge (VQA or the axis' classifier) reads the axes off labelled images at least "
        "threshold accurately (Wilson interval), with per-value accuracy, confusion and MaxSkew@K",
))

register_check(CheckKind(
    name="intervention_improves",
    run=f"{_RUNS}:run_intervention_improves",
    params=(Param("axes", AXIS_LIST, required=True, doc="two-valued axes to judge, one item each"),
            Param("interventions", AXIS_LIST, required=True, check=_text_list,
                  doc="phrases appended to the prompt (ENTIGEN: '... if all individuals can be "
                      "a {subject} irrespective of their gender')"),
            Param("controls", AXIS_LIST, check=_text_list,
                  doc="irrelevant phrases that must not move diversity (a warning if they do)"),
            Param("min_improvement", NUMBER, default=0.0, check=_unit_interval,
                  doc="diversity (Eq. 1, smaller is more diverse) must fall by at least this"),
            *COMMON_PARAMS),
    doc="ENTIGEN: each ethical intervention lowers the diversity score (Eq. 1) of the subject's "
        "images by at least min_improvement (paired seeds)",
))

BUILTIN_KINDS: tuple[str, ...] = tuple(CHECK_KINDS)
"""The kinds this package declares, in declaration order (before any ``register_check`` of a
user or a test): the ones the YAML reference and the suite schema document."""
