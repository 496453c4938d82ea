"""How a check samples and who carries the burden of proof, decided once: which models, how
many images, seed, steps, guidance, burden.

Every precedence rule lives here and nowhere else:

- models: command line > the suite's ``models:`` > ini (``--t2i-images`` stands in for the
  candidate model: a folder audit); their loading options: ``--t2i-model-option`` (or
  ``--t2i-baseline-model-option``), key by key, over the suite's ``models.<role>.options``,
  which apply only to the suite's own model;
- images per prompt: ``--t2i-images-per-prompt`` > the check's ``images_per_prompt`` > the
  caller's ``n`` (Python tests) > the suite's ``defaults`` > 16; adaptive (issue #26, only
  for a gated check of a kind that supports it): the check's ``images_per_prompt: {max: N}``
  unless ``--t2i-images-per-prompt`` fixes n, else the suite's ``defaults:
  {images_per_prompt: {max: N}}`` unless the check or the caller sets its own n, else
  adaptive rounds (the default; ``--t2i-fixed-n`` turns them off) with the cap
  ``--t2i-adaptive-max`` > 1.25 times the fixed n above
  (``metrics.sequential.DEFAULT_CAP_MULTIPLE``; ``Plan.looks``); a check that cannot stop early draws a default ``{max: N}``'s N;
- seed, steps, guidance, height, width: command line > the caller's value > the suite's
  ``defaults`` > the sampling the candidate model declares (``declared_sampling``) > the seed
  0 and the pipeline's own (None here: the generator reads it off the pipeline class,
  ``backends/own_sampling.py``, and the run header names it); scheduler: the model's
  declaration > the pipeline's own. ``Plan.sources`` says where each value came from;
- burden: ``--t2i-burden`` > the check's ``burden:`` > the suite's ``burden:`` > model;
- protocol: ``--t2i-protocol`` > the check's ``protocol:`` > the suite's > gate; ``paper``
  reads the judge's answers as read (judge correction off, whatever asked it) at a fixed n
  (an adaptive check draws its cap); a kind's own paper settings are its
  ``CheckKind.paper_protocol`` (``kinds._base.protocol_params``);
- confidence (``Levels``): a check gates at its own ``confidence:``, else the suite's (the
  loader puts the suite's into the check's ``params``; none: it decides on the point value) and computes its intervals at that level, else at ``--t2i-confidence``; the
  family of gated checks may lower the gate's level further (``Levels.gated_at``).

YAML items resolve their ``Plan`` at collection (``--t2i-plan`` can show it before any model
loads); the ``t2ibias`` fixture resolves one per call. The instrument only reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._files import read_json
from .suite_spec import SuiteDefaults
from .verdict import DEFAULT_BURDEN

if TYPE_CHECKING:
    from ._settings import Settings
    from .suite_spec import CheckSpec, Suite

DEFAULT_IMAGES_PER_PROMPT = 16
DEFAULT_SEED = 0
SAMPLING_FILE = "t2ibias.json"
"""A model directory's own declaration of its recommended sampling:
``{"sampling": {"steps": 20, "guidance": 2.0, "height": 32, "width": 32, "scheduler": ...}}``."""
SAMPLING_KEYS = {"steps": "steps", "num_inference_steps": "steps", "guidance": "guidance",
                 "guidance_scale": "guidance", "height": "height", "width": "width",
                 "scheduler": "scheduler"}

SAMPLING = ("steps", "guidance", "height", "width")
"""The sampling values a plan resolves by precedence (None: the pipeline's own)."""

ROLES = ("candidate", "baseline")
"""Generator roles: the model under test, and the one a merge gate compares it with."""


@dataclass(frozen=True)
class Levels:
    """A check's two confidence levels: ``gate``, the level its interval must clear to pass
    or fail (None: a point decision), and ``interval``, the level every interval it reports
    is computed at (the gate's when it gates, so the message and the decision read the same
    interval)."""

    gate: float | None
    interval: float

    @classmethod
    def of(cls, own: float | None, default: float) -> Levels:
        """A check's own ``confidence:`` (None: ungated), else intervals at ``default``."""
        return cls(own, own if own is not None else default)

    def gated_at(self, level: float | None) -> Levels:
        """These levels with the gate at ``level`` (the family's adjustment of the check's
        own), its intervals computed at that level too."""
        return Levels(level, level if level is not None else self.interval)

    def spent_over(self, looks: tuple[int, ...], at: int, spending: str) -> Levels:
        """These levels at the look of ``at`` images per prompt of a check that looks at
        ``looks`` and stops once decided: that look gates on, and computes, its interval at
        the level ``spending`` gives it, so the chance that any look's interval excludes the
        truth is at most 1 - level (``metrics.sequential.look_confidence``)."""
        from .metrics.sequential import look_confidence

        return Levels(None if self.gate is None else look_confidence(self.gate, looks, at,
                                                                     spending),
                      look_confidence(self.interval, looks, at, spending))


@dataclass(frozen=True)
class Plan:
    """The sampling of one check (or one Python call), frozen."""

    candidate: str | None
    baseline: str | None
    images_per_prompt: int
    seed: int
    steps: int | None = None
    guidance: float | None = None
    burden: str = "model"
    """Who must prove its case when an interval straddles a limit (``verdict.BURDENS``)."""
    protocol: str = "gate"
    """What the check computes (``_settings.PROTOCOLS``): the project's gate or its paper's figure."""
    judge_correction: str = "on"
    """How shares are corrected for the judge's confusion (``_settings.JUDGE_CORRECTIONS``):
    ``--t2i-judge-correction`` > the check's > the suite's > on."""
    abstain_below: float | None = None
    """The run's abstention floor (``--t2i-abstain-below``); an axis' own wins."""
    audits_folder: bool = False
    """The candidate is a ``--t2i-images`` folder: nothing is drawn, so no counterfactual
    image can calibrate the judge (a labelled folder still can)."""
    height: int | None = None
    width: int | None = None
    scheduler: str | None = None
    sampling_source: str = ""
    """The file the candidate model's declared sampling came from, when it was used."""
    levels: Levels = Levels(None, 0.95)
    """The check's gate and interval confidence (``--t2i-confidence`` and its ``confidence:``)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each set sampling value came from (``--t2i-steps``, ``suite defaults``, the
    declaration's file, ``the caller``); a value not set is the pipeline's own."""
    loading: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Role -> the ``from_pretrained`` keywords its pipeline loads with (none: empty)."""
    looks: tuple[int, ...] = ()
    """Adaptive sampling (issue #26): the images per prompt at which the check looks and
    stops once decided (``metrics.sequential.doubling_looks``; the last is the cap and
    ``images_per_prompt``); empty: a fixed n."""
    spending: str = "obrien_fleming"
    """How an adaptive check spends its alpha over its looks (``--t2i-adaptive-spending``,
    ``metrics.sequential.SPENDING_FUNCTIONS``)."""

    @property
    def adaptive(self) -> bool:
        return bool(self.looks)

    @property
    def before_cap(self) -> bool:
        """A look of an adaptive check before its last: it stops only on evidence."""
        return self.adaptive and self.images_per_prompt < self.looks[-1]

    @property
    def sampling(self) -> dict[str, Any]:
        """The sampling keywords of every ``ImageRequest`` this plan makes."""
        return {"steps": self.steps, "guidance": self.guidance, "height": self.height,
                "width": self.width, "scheduler": self.scheduler}

    def levels_at(self, gate: float | None) -> Levels:
        """The levels a verdict of this plan is computed at, gating at ``gate`` (the family's
        adjustment of the check's own, ``Family.confidence``): an adaptive look's spent over
        its looks. What the kind computes at and what the report says it computed at."""
        levels = self.levels.gated_at(gate)
        if self.adaptive:
            levels = levels.spent_over(self.looks, self.images_per_prompt, self.spending)
        return levels

    def model(self, role: str) -> str | None:
        """The model id or path for ``role`` ("candidate" or "baseline")."""
        if role not in ROLES:
            raise ValueError(f"unknown generator role {role!r}; roles: {', '.join(ROLES)}")
        return self.candidate if role == "candidate" else self.baseline

    def options(self, role: str) -> dict[str, Any]:
        """The loading options of ``role``'s model (``parse_model_options``'s keywords)."""
        self.model(role)  # the same unknown-role error
        return dict(self.loading.get(role, {}))


def levels_of(settings: Settings, check: CheckSpec | None = None) -> Levels:
    """The check's confidence levels under ``settings``: the one place they are worked out
    (a suite's planner, ``planner.plan_check``, resolves them once and hands them on)."""
    return Levels.of(_number(check.params.confidence) if check is not None else None,
                     settings.confidence)


def plan_for(settings: Settings, suite: Suite | None = None, check: CheckSpec | None = None,
             *, n: int | None = None, seed: int | None = None, steps: int | None = None,
             guidance: float | None = None, adaptive: bool = False,
             levels: Levels | None = None) -> Plan:
    """The ``Plan`` for ``check`` of ``suite`` (both optional) under ``settings``;
    ``adaptive``: the check's kind can sample in rounds (``CheckKind.adaptive``); ``levels``:
    the check's, already resolved (``levels_of``, by default here)."""
    defaults = suite.defaults if suite is not None else SuiteDefaults()
    check_n = check.params.images_per_prompt if check is not None else None
    own_cap = check_n.get("max") if isinstance(check_n, dict) else None
    if check_n == "auto" or own_cap is not None:  # auto: the collector passes it as ``n``
        check_n = None
    default_n = defaults.images_per_prompt
    if isinstance(default_n, dict):  # defaults: {images_per_prompt: {max: N}}
        default_n = default_n["max"]
        if own_cap is None and check_n is None and n is None:
            own_cap = default_n
    candidate = _model(settings, suite, "candidate")
    declared, source = ({}, "") if settings.images else declared_sampling(candidate)
    given = {"steps": steps, "guidance": guidance, "height": None, "width": None}
    sampling = {name: _chosen({f"--t2i-{name}": getattr(settings, name), "the caller": given[name],
                               "suite defaults": getattr(defaults, name), source: declared.get(name)},
                              zero_is_set=name == "guidance")
                for name in SAMPLING}
    levels = levels if levels is not None else levels_of(settings, check)
    protocol = _first(settings.protocol, check.params.protocol if check is not None else None,
                      suite.protocol if suite is not None else None, "gate")
    paper = protocol == "paper"  # the papers draw a fixed n and read the judge's answers as read
    fixed_n = _first(settings.images_per_prompt, own_cap if paper else None, check_n, n,
                     default_n, DEFAULT_IMAGES_PER_PROMPT)
    looks = (_looks(settings, own_cap, fixed_n)
             if adaptive and levels.gate is not None and not paper else ())
    return Plan(
        candidate=candidate,
        baseline=_model(settings, suite, "baseline"),
        images_per_prompt=looks[-1] if looks else fixed_n,
        seed=_first_set(settings.seed, seed, defaults.seed, DEFAULT_SEED),
        steps=sampling["steps"][0],
        guidance=sampling["guidance"][0],
        burden=_first(settings.burden, check.params.burden if check is not None else None,
                      suite.burden if suite is not None else None, DEFAULT_BURDEN),
        protocol=protocol,
        judge_correction="off" if paper else _first(settings.judge_correction,
                                check.params.judge_correction if check is not None else None,
                                suite.judge_correction if suite is not None else None, "on"),
        abstain_below=settings.abstain_below,
        audits_folder=bool(settings.images) and candidate == settings.images,
        height=sampling["height"][0],
        width=sampling["width"][0],
        scheduler=declared.get("scheduler"),
        sampling_source=source,
        sources={name: where for name, (value, where) in sampling.items() if value is not None},
        levels=levels,
        looks=looks,
        spending=settings.adaptive_spending,
        loading={role: options for role in ROLES
                 if (options := _loading(settings, suite, role, candidate))},
    )


def _looks(settings: Settings, own_cap: int | None, fixed_n: int) -> tuple[int, ...]:
    """The looks of an adaptive check: its own ``{max: N}`` unless the command line fixes n,
    else (unless ``--t2i-fixed-n``) up to ``--t2i-adaptive-max`` or 1.25 times the check's fixed n
    (``DEFAULT_CAP_MULTIPLE``: the cap's spent interval about as wide as fixed n's; 1 time
    for a folder of images, ``--t2i-images``, which holds what it holds)."""
    from .metrics.sequential import DEFAULT_CAP_MULTIPLE, doubling_looks

    if own_cap is not None and settings.images_per_prompt:
        return ()  # the command line's n wins over a check's own {max: N}
    if settings.adaptive:
        cap = (settings.adaptive_max or own_cap
               or (1.0 if settings.images else DEFAULT_CAP_MULTIPLE))
        if isinstance(cap, float):  # 2x, or the default 1.25: a multiple of the check's own n
            cap = math.ceil(cap * (own_cap or fixed_n))
        return doubling_looks(cap)
    if own_cap is not None:
        return doubling_looks(own_cap)
    return ()


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


_DECLARED: dict[str, tuple[dict[str, Any], str]] = {}


def declared_sampling(model: str | None) -> tuple[dict[str, Any], str]:
    """The sampling a local model directory recommends, and the file that says so.

    ``<model>/t2ibias.json`` (``{"sampling": {...}}``), else the toy build's
    ``<model>/../manifest.json`` (``models.<name>.sampling``); ``({}, "")`` for a hub id or
    a directory that declares nothing. Reads JSON only (no torch), once per model a process.
    """
    if not model:
        return {}, ""
    if model not in _DECLARED:
        _DECLARED[model] = _read_declared(Path(model))
    return _DECLARED[model]


def _read_declared(path: Path) -> tuple[dict[str, Any], str]:
    candidates = [(path / SAMPLING_FILE, lambda data: data.get("sampling")),
                  (path.parent / "manifest.json",
                   lambda data: ((data.get("models") or {}).get(path.name) or {}).get("sampling"))]
    for file, pick in candidates:
        try:
            if not path.is_dir() or not file.is_file():
                continue
            sampling = pick(read_json(file))
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(sampling, dict):
            declared = {SAMPLING_KEYS[k]: v for k, v in sampling.items()
                        if k in SAMPLING_KEYS and v is not None}
            if declared:
                return declared, str(file)
    return {}, ""


def _model(settings: Settings, suite: Suite | None, role: str) -> str | None:
    from_cli = settings.models_from_command_line
    if role == "candidate":
        given_on_cli = bool(from_cli & {"images", "model"})
        configured = settings.images or settings.model
    else:
        given_on_cli = "baseline_model" in from_cli
        configured = settings.baseline_model
    suite_model = (suite.models or {}).get(role) if suite is not None else None
    return suite_model if suite_model and not given_on_cli else configured


def _loading(settings: Settings, suite: Suite | None, role: str,
             candidate: str | None) -> dict[str, Any]:
    """``role``'s loading options: the suite's, when its model is the one used, then the
    command line's key by key; none for a folder audit (nothing loads)."""
    if role == "candidate" and settings.images and candidate == settings.images:
        return {}
    model = candidate if role == "candidate" else _model(settings, suite, role)
    suite_model = (suite.models or {}).get(role) if suite is not None else None
    own = suite.model_options.get(role, {}) if suite is not None and model == suite_model else {}
    given = settings.model_options if role == "candidate" else settings.baseline_model_options
    revision = settings.revision if role == "candidate" else settings.baseline_revision
    # --t2i-revision is the revision loading option under another name (one rule)
    return {**own, **given, **({"revision": revision} if revision is not None else {})}


def _chosen(chain: dict[str, Any], *, zero_is_set: bool) -> tuple[Any, str]:
    """The first value of ``chain`` (source -> value, highest precedence first) that is set,
    and its source; ``(None, "")``: none is, the pipeline's own applies."""
    for where, value in chain.items():
        if value is not None and (value or zero_is_set):
            return value, where
    return None, ""


def _first(*values):
    """The first truthy value (0 reads as unset, as the options always have)."""
    return next((v for v in values if v), None)


def _first_set(*values):
    """The first value that is not None (a guidance of 0.0 is a choice)."""
    return next((v for v in values if v is not None), None)
