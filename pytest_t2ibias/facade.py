"""``t2ibias``: the methods for Python tests, each composed with the suite, its lock file and a
``Plan``; plus plain generating and asking.

It holds no measuring of its own: images and answers come from an ``Instrument`` (models
behind the cache), figures from ``methods/``. A YAML item reaches the same methods through
``checks.py`` with the same pieces.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._test_call import test_sightings
from .equipment import Equipment
from .plan import plan_for

if TYPE_CHECKING:
    from ._settings import Settings
    from ._types import Answers, ImageSet
    from .backends._base import Answerer, LanguageModel
    from .instrument import Instrument, Models
    from .locks.bgps import BGPSLocks
    from .locks.counterfactual import PromptLocks
    from .methods.bgps import BGPSGateResult
    from .methods.intermit import InterMitResult
    from .metrics import ISMatrix
    from .store.request_layer import RequestLayer
    from .suite_spec import AxisSpec, FilterSpec, Suite


class T2IBias:
    """The methods for Python tests on one ``Equipment``: the session's, in a pytest run
    (the items and the fixture share its models, cache and lock files), or a script's own."""

    def __init__(self, equipment: Equipment, *, progress: Callable[[str], None] | None = None
                 ) -> None:
        self.equipment = equipment
        self.progress = progress
        """Where a BGPS search reports one line per step (the pytest route: stderr unless -q)."""

    @classmethod
    def standalone(cls, **options: Any) -> T2IBias:
        """Outside pytest (scripts, notebooks): the built-in backends, options by name
        (``model=``, ``vqa=``, ``classifiers={axis: path}``, ``cache_dir=``, ...)."""
        from ._settings import Settings

        settings = Settings.standalone(**options)
        return cls.from_provider(settings, _builtin_backends(settings))

    @classmethod
    def from_provider(cls, settings: Settings, provider: Any) -> T2IBias:
        """A facade whose backends come from ``provider`` (``.generator(model, role)``,
        ``.vqa(model)``, ``.classifier(axis, model)``, ``.llm(model)``)."""
        return cls(Equipment(settings, provider))

    @property
    def settings(self) -> Settings:
        return self.equipment.settings

    @property
    def models(self) -> Models:
        return self.equipment.models

    @property
    def requests(self) -> RequestLayer:
        return self.equipment.requests

    @property
    def locks(self) -> PromptLocks:
        return self.equipment.counterfactual_locks

    @property
    def bgps_locks(self) -> BGPSLocks:
        return self.equipment.bgps_locks

    def instrument(self, suite: Suite | None = None, **sampling: Any) -> Instrument:
        """An instrument sampling as ``suite`` says (the command line still wins);
        ``sampling``: ``n=``, ``seed=``, ``steps=``, ``guidance=`` for plain calls."""
        return self.equipment.instrument(plan_for(self.settings, suite, **sampling),
                                         test_sightings.get())

    @property
    def llm(self) -> LanguageModel:
        return self.models.llm

    def classifier_model(self, axis: str) -> Answerer:
        return self.models.classifier(axis)

    # -- generating and asking ----------------------------------------------------------------

    def generate(self, prompts: str | Sequence[str], n: int | None = None, seed: int | None = None,
                 *, baseline: bool = False, steps: int | None = None,
                 guidance: float | None = None) -> ImageSet:
        """``n`` images per prompt; image i of every prompt shares its noise (paired)."""
        instrument = self.instrument(n=n, seed=seed, steps=steps, guidance=guidance)
        return instrument.images(prompts, role="baseline" if baseline else "candidate")

    def ask(self, images: ImageSet, question: str, choices: Sequence[str],
            statements: Sequence[str] | None = None) -> Answers:
        return self.instrument().ask(images, question, choices, statements)

    def classify(self, axis: str, images: ImageSet, choices: Sequence[str]) -> Answers:
        return self.instrument().classify(axis, images, choices)

    def attributes(self, images: ImageSet, axis: AxisSpec, filter: FilterSpec | None = None) -> Answers:
        """Read ``axis`` off every image (``Instrument.attributes``)."""
        return self.instrument().attributes(images, axis, filter)

    def subject_attributes(self, suite: Suite, subject: str, axis: AxisSpec, *,
                           baseline: bool = False) -> Answers:
        """Answers for ``axis`` on the images of the suite's prompt for ``subject``."""
        instrument = self.instrument(suite)
        images = instrument.images([suite.prompt_for(subject)],
                                   role="baseline" if baseline else "candidate")
        return instrument.attributes(images, axis, suite.filter)

    def counterfactual_suite(self, suite: Suite, subject: str) -> Suite:
        """``suite`` with its ``counterfactuals: llm`` axes phrased for ``subject``: from the
        lock file beside the suite (the run's protocol's), written with --t2i-llm when
        missing (``_prompt_lock``)."""
        return self.locks.phrase(suite, subject, plan_for(self.settings, suite).protocol)

    # -- methods ------------------------------------------------------------------------------

    def biasconnect(self, suite: Suite | str | os.PathLike, subject: str, *,
                    axes: Sequence[str] | None = None, mitigate: Sequence[str] | None = None,
                    baseline: bool = False, confidence: float | None = None) -> ISMatrix:
        """BiasConnect's IS matrix for ``subject``; ``suite`` may be a suite file's path, so
        Python tests reuse the axes and counterfactuals a YAML suite declares. ``mitigate``
        computes only those rows (fewer images); ``confidence`` is the intervals' level
        (default ``--t2i-confidence``)."""
        from .methods.biasconnect import intersectional_sensitivity_for

        suite = _suite(suite)
        return intersectional_sensitivity_for(
            self.instrument(suite), self.counterfactual_suite(suite, subject), subject,
            axes=axes, mitigate=mitigate, role="baseline" if baseline else "candidate",
            **self._intervals(confidence))

    def intermit(self, suite: Suite | str | os.PathLike, subject: str, *,
                 priority: dict[str, float] | None = None, epsilon: float | None = None,
                 max_steps: int | None = None, tolerance: float | None = None,
                 confidence: float | None = None) -> InterMitResult:
        """InterMit (BiasConnect Algorithm 1) with prompt-modification mitigation for
        ``subject``: which axes to mitigate, in what order, and how far tau falls; a step
        that makes a prioritised axis worse by more than ``tolerance`` is an alert."""
        from .kinds.intermit import IntermitParams
        from .methods.intermit import intermit

        suite = _suite(suite)
        default = IntermitParams.default  # the check kind's settings are the defaults
        return intermit(self.instrument(suite), self.counterfactual_suite(suite, subject), subject,
                        priority=priority,
                        epsilon=default("epsilon") if epsilon is None else epsilon,
                        max_steps=max_steps,
                        tolerance=default("tolerance") if tolerance is None else tolerance,
                        **self._intervals(confidence))

    def mitigation_effect(self, suite: Suite | str | os.PathLike, subject: str, *,
                          axes: Sequence[str] | None = None,
                          confidence: float | None = None) -> dict:
        """IS_mit per axis: baseline model vs candidate on the subject's prompt, paired seeds
        (the fine-tune merge gate, BiasConnect A.5/A.9)."""
        from .methods.gate import mitigation_effect_for

        suite = _suite(suite)
        return mitigation_effect_for(self.instrument(suite), suite, subject, axes=axes,
                                     **self._intervals(confidence))

    def bgps(self, suite: Suite | str | os.PathLike, *, target: dict[str, str] | tuple[str, str],
             n: int | None = None, name: str | None = None, **search: Any) -> BGPSGateResult:
        """Bias-Guided Prompt Search for ``target`` (``{"axis": "gender", "value": "male"}``),
        each found prompt measured on ``n`` images (default: the suite's), beside the λ = 0
        baseline and the neutral prompt. ``search``: the check kind's parameters (``lambda``,
        ``beam``, ``expansion``, ``prompts``, ``max_new_tokens``, ``model_prompt``, ``probe``,
        ...). The prompts are frozen in ``<suite>.t2i.bgps.lock.json`` under ``name``
        (default ``axis=value``): a rerun measures them without searching."""
        from .kinds.no_bgps_prompt_exceeds import NoBGPSPromptExceedsParams, gate_of
        from .params import build

        suite = _suite(suite)
        if not isinstance(target, dict):
            target = dict(zip(("axis", "value"), target))
        key = name or f"{target['axis']}={target['value']}"
        # the check kind's parameters and defaults; its threshold gates nothing here
        params = build(NoBGPSPromptExceedsParams, {"threshold": 1.0, **search, "target": target})
        gate = gate_of(key, suite, params)
        instrument = self.instrument(suite, n=n)
        return self.bgps_locks.run(instrument, suite, gate, confidence=self.settings.confidence,
                                   progress=self.progress, protocol=instrument.plan.protocol)

    def openbias(self, captions: str | Sequence[str], *, suite: Suite | str | os.PathLike | None = None,
                  name: str = "openbias", subject: str | None = None, biases: Sequence[str] | None = None,
                  max_biases: int | None = None, n: int | None = None,
                  confidence: float | None = None, lock: str | os.PathLike | None = None,
                  knowledge_base: str = "floor", llm_captions: int | None = None) -> Any:
        """OpenBias on ``captions``: proposals (LLM when --t2i-llm is set, and the shipped
        knowledge base as ``knowledge_base`` says: floor, off or only), frozen under ``name`` in
        the suite's ``.openbias.lock.json`` (or ``lock``, a suite path to sit beside), then
        ``n`` images per caption measured: the ranked ``OpenBiasResult`` (``ranked_by`` ranks
        it by context-aware severity). ``llm_captions``: the LLM also writes that many
        captions of ``subject`` (a caption set, locked)."""
        from .locks.openbias import run_openbias

        captions = [captions] if isinstance(captions, str) else list(captions)
        loaded = _suite(suite) if suite is not None else None
        suite_path = Path(lock) if lock is not None else loaded.path if loaded is not None else \
            Path("openbias.t2i.yaml")
        instrument = self.instrument(loaded, n=n)
        return run_openbias(instrument, suite_path, name, captions, subject=subject,
                            only=biases, max_biases=max_biases, knowledge_base=knowledge_base,
                            llm_captions=llm_captions, update=self.settings.update_locks,
                            protocol=instrument.plan.protocol, **self._intervals(confidence))


    def audit_judge(self, folder: str | os.PathLike[str],
                    axes: list[AxisSpec] | tuple[AxisSpec, ...] | Suite | str | os.PathLike[str],
                     *, k: int | None = None, confidence: float | None = None) -> dict:
        """The judge's (VQA, or the axis' classifier) accuracy per axis and value with Wilson
        intervals, confusion and retrieval MaxSkew@K on a labelled folder (``index.jsonl``)."""
        from .methods.socialcf import audit_judge

        if not isinstance(axes, (list, tuple)):
            axes = list(_suite(axes).axes.values())
        return audit_judge(self.instrument(), Path(folder), axes, k=k,
                           confidence=confidence or self.settings.confidence)


    def entigen(self, suite: Suite | str | os.PathLike, subject: str, axis: str,
                 interventions: Sequence[str], *, controls: Sequence[str] = (),
                 confidence: float | None = None) -> Any:
        """ENTIGEN: each phrase appended to the subject's prompt, diversity (Eq. 1) and bias
        (Eq. 2) before and after, paired seeds."""
        from .methods.entigen import entigen

        suite = _suite(suite)
        return entigen(self.instrument(suite), suite.prompt_for(subject), suite.axes[axis],
                       interventions, controls=controls, filter=suite.filter,
                       **self._intervals(confidence))

    def _intervals(self, confidence: float | None = None) -> dict[str, Any]:
        return {"confidence": confidence or self.settings.confidence,
                "n_resamples": self.settings.bootstrap}


def _suite(suite: Suite | str | os.PathLike) -> Suite:
    """A loaded suite, or the suite file at that path."""
    from .suite.load import load_suite

    return load_suite(Path(suite)) if isinstance(suite, (str, os.PathLike)) else suite


def _builtin_backends(settings: Settings) -> Any:
    from .backends._providers import BuiltinBackends

    return BuiltinBackends(settings)


class GeneratorHandle:
    """The ``t2i_generator`` fixture: ``.generate(prompts, n=None, seed=None) -> ImageSet``."""

    def __init__(self, facade: T2IBias, *, baseline: bool = False) -> None:
        self._facade = facade
        self._baseline = baseline

    def generate(self, prompts: str | Sequence[str], n: int | None = None,
                 seed: int | None = None, **options: Any) -> ImageSet:
        return self._facade.generate(prompts, n, seed, baseline=self._baseline, **options)


class VQAHandle:
    """The ``vqa`` fixture: ``.ask(images, question, choices) -> Answers``."""

    def __init__(self, facade: T2IBias) -> None:
        self._facade = facade

    def ask(self, images: ImageSet, question: str, choices: Sequence[str],
            statements: Sequence[str] | None = None) -> Answers:
        return self._facade.ask(images, question, choices, statements)


class ClassifierHandle:
    """``attribute_classifier(axis)``: ``.classify(images, choices=None) -> Answers``."""

    def __init__(self, facade: T2IBias, axis: str) -> None:
        self._facade = facade
        self.axis = axis

    def classify(self, images: ImageSet, choices: Sequence[str] | None = None) -> Answers:
        if choices is None:
            choices = getattr(self._facade.classifier_model(self.axis), "labels", None)
            if choices is None:
                raise TypeError(f"pass choices= for the {self.axis!r} classifier")
        return self._facade.classify(self.axis, images, choices)

