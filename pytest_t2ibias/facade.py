"""``t2ibias``: one object that generates, asks, and runs the methods, behind the cache.

Backends are made through the ``pytest_t2ibias_make_*`` hooks the first time something
needs them; a backend whose every result is already cached is never loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from ._cache import Cache
from ._options import Settings
from ._requests import RequestLayer
from ._types import FILTERED, Answers, ImageRequest, ImageSet
from .backends._base import Answerer, Generator, LanguageModel
from .backends._providers import BuiltinBackends, HookBackends

if TYPE_CHECKING:
    from ._session import T2ISession
    from .suite.spec import AxisSpec, FilterSpec, Suite

DEFAULT_IMAGES_PER_PROMPT = 16
DEFAULT_SEED = 0


class MissingModel(pytest.UsageError):
    """A check needs a model no option names."""


class T2IBias:
    def __init__(self, settings: Settings, backends: Any, *,
                 models_from_command_line: frozenset[str] = frozenset()) -> None:
        self.settings = settings
        self.backends = backends
        self.models_from_command_line = models_from_command_line
        """Model options given on the command line; they win over a suite's ``models:``."""
        cache = Cache(None if settings.no_cache else settings.cache_dir, read=not settings.refresh)
        self.layer = RequestLayer(cache, batch_size=settings.batch_size)
        self._prompt_locks: dict[tuple, Any] = {}  # suite -> its counterfactual lock, read once

    @classmethod
    def from_session(cls, session: T2ISession) -> T2IBias:
        """Inside pytest: backends come from the ``pytest_t2ibias_make_*`` hooks."""
        config = session.config
        given = frozenset(name for name in ("t2i_images", "t2i_model", "t2i_baseline_model")
                          if config.getoption(name, None))
        return cls(session.settings, HookBackends(config), models_from_command_line=given)

    @classmethod
    def standalone(cls, **options: Any) -> T2IBias:
        """Outside pytest (scripts, notebooks): the built-in backends, options by name
        (``model=``, ``vqa=``, ``classifiers={axis: path}``, ``cache_dir=``, ...)."""
        settings = Settings.standalone(**options)
        return cls(settings, BuiltinBackends(settings))

    # -- backends, made on first use ----------------------------------------------------------

    def _generator(self, role: str, suite: Suite | None = None) -> Generator:
        """The generator for ``role``; one per model path, so suites naming different
        ``models:`` share a process. Precedence: command line > suite ``models:`` > ini."""
        model = self._model_for(role, suite)
        if not model:
            option = "--t2i-model (or --t2i-images)" if role == "candidate" else "--t2i-baseline-model"
            raise MissingModel(f"this check generates images but {option} is not set "
                               f"(command line, ini key {option.split()[0][2:].replace('-', '_')}, "
                               f"or the suite's models.{role})")
        cache = self.__dict__.setdefault("_generators", {})
        if (role, model) not in cache:
            cache[(role, model)] = self.backends.generator(model, role)
        return cache[(role, model)]

    def _model_for(self, role: str, suite: Suite | None) -> str | None:
        """The model for ``role``: command line, then the suite's ``models:``, then ini."""
        names = ("t2i_images", "t2i_model") if role == "candidate" else ("t2i_baseline_model",)
        from_cli = any(name in self.models_from_command_line for name in names)
        suite_model = (getattr(suite, "models", None) or {}).get(role)
        if suite_model and not from_cli:
            return suite_model
        if role == "candidate":
            return self.settings.images or self.settings.model
        return self.settings.baseline_model

    @cached_property
    def vqa_model(self) -> Answerer:
        if not self.settings.vqa:
            raise MissingModel("this check asks questions about images but --t2i-vqa is not set "
                               "(command line or ini key t2i_vqa)")
        return self.backends.vqa(self.settings.vqa)

    def classifier_model(self, axis: str) -> Answerer:
        cache = self.__dict__.setdefault("_classifiers", {})
        if axis not in cache:
            model = self.settings.classifiers.get(axis)
            if model is None:
                known = ", ".join(sorted(self.settings.classifiers)) or "none"
                raise MissingModel(f"no --t2i-classifier for axis {axis!r} (configured: {known}); "
                                   f"add --t2i-classifier={axis}=PATH")
            cache[axis] = self.backends.classifier(axis, model)
        return cache[axis]

    @cached_property
    def llm(self) -> LanguageModel:
        if not self.settings.llm:
            raise MissingModel("this check needs a language model but --t2i-llm is not set "
                               "(command line or ini key t2i_llm)")
        return self.backends.llm(self.settings.llm)

    # -- generation ---------------------------------------------------------------------------

    def generate(
        self,
        prompts: str | Sequence[str],
        n: int | None = None,
        seed: int | None = None,
        *,
        baseline: bool = False,
        steps: int | None = None,
        guidance: float | None = None,
    ) -> ImageSet:
        """``n`` images per prompt; image i of every prompt shares its noise (paired)."""
        n = self.settings.images_per_prompt or n or DEFAULT_IMAGES_PER_PROMPT
        return self._generate(prompts, n, seed, baseline=baseline, steps=steps, guidance=guidance)

    def _generate(self, prompts: str | Sequence[str], n: int, seed: int | None, *,
                  baseline: bool = False, steps: int | None = None,
                  guidance: float | None = None, suite: Suite | None = None) -> ImageSet:
        """Exactly ``n`` images per prompt (the caller already applied the options)."""
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        seed = self.settings.seed if self.settings.seed is not None else (
            DEFAULT_SEED if seed is None else seed)
        generator = self._generator("baseline" if baseline else "candidate", suite)
        steps = self.settings.steps or steps
        guidance = self.settings.guidance if self.settings.guidance is not None else guidance
        if (steps or guidance is not None) and hasattr(generator, "with_options"):
            generator = generator.with_options(steps=steps, guidance_scale=guidance)
        requests = [ImageRequest(prompt, seed, i) for prompt in prompts for i in range(n)]
        return self.layer.images(generator, requests)

    def images_per_prompt(self, suite: Suite) -> int:
        """N for ``suite``: --t2i-images-per-prompt, else the suite's defaults, else 16."""
        return (self.settings.images_per_prompt or suite.defaults.get("images_per_prompt")
                or DEFAULT_IMAGES_PER_PROMPT)

    def generate_for(self, suite: Suite, prompts: Sequence[str], *, baseline: bool = False,
                     per_prompt: int | None = None) -> ImageSet:
        """``generate`` with the suite's ``defaults`` and ``models:`` (the command line still
        wins). ``per_prompt`` overrides N (InterMit splits N images across its prompts)."""
        defaults = suite.defaults
        return self._generate(prompts, per_prompt or self.images_per_prompt(suite),
                              defaults.get("seed"), baseline=baseline, steps=defaults.get("steps"),
                              guidance=defaults.get("guidance"), suite=suite)

    # -- answering ------------------------------------------------------------------------------

    def ask(self, images: ImageSet, question: str, choices: Sequence[str],
            statements: Sequence[str] | None = None) -> Answers:
        return self.layer.answers(self.vqa_model, images, question, choices, statements)

    def classify(self, axis: str, images: ImageSet, choices: Sequence[str]) -> Answers:
        return self.layer.answers(self.classifier_model(axis), images, f"<classify {axis}>", choices)

    def attributes(self, images: ImageSet, axis: AxisSpec, filter: FilterSpec | None = None) -> Answers:
        """Read ``axis`` off every image: classifier when configured for it, else VQA;
        multi-part axes as one yes/no question per part. Images the filter drops are
        labelled ``FILTERED`` (counted and reported, never silently lost)."""
        if axis.parts:
            answers = self._multi_part(images, axis)
        elif axis.name in self.settings.classifiers:
            answers = self.classify(axis.name, images, axis.choices)
        else:
            answers = self.ask(images, axis.question, axis.choices,
                               _in_order(axis.statements, axis.choices))
        if filter is None:
            return answers
        kept = self.keep_mask(images, filter)
        labels = np.where(kept, answers.labels, FILTERED)
        return Answers(answers.question, answers.choices, labels, answers.probabilities,
                       answers.prompts, answers.image_keys)

    def keep_mask(self, images: ImageSet, filter: FilterSpec) -> np.ndarray:
        verdicts = self.ask(images, filter.question, filter.choices,
                            _in_order(filter.statements, filter.choices))
        return verdicts.labels == filter.choices.index(filter.keep)

    def _multi_part(self, images: ImageSet, axis: AxisSpec) -> Answers:
        """Disability-style axes: the first part answered "yes", else ``none_value``."""
        choices = axis.choices
        labels = np.full(len(images), choices.index(axis.none_value), dtype=int)
        probabilities = np.zeros((len(images), len(choices)))
        decided = np.zeros(len(images), dtype=bool)
        for part in axis.parts:
            reply = self.ask(images, part.question, ("yes", "no"),
                             _in_order(part.statements, ("yes", "no")))
            yes = (reply.labels == 0) & ~decided
            labels[yes] = choices.index(part.value)
            probabilities[:, choices.index(part.value)] = reply.probabilities[:, 0]
            decided |= yes
        probabilities[:, choices.index(axis.none_value)] = 1.0 - probabilities.max(axis=1)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return Answers(axis.question, choices, labels, probabilities,
                       tuple(i.prompt for i in images), tuple(i.key for i in images))

    def subject_attributes(self, suite: Suite, subject: str, axis: AxisSpec, *,
                           baseline: bool = False) -> Answers:
        """Answers for ``axis`` on the images of the suite's prompt for ``subject``."""
        images = self.generate_for(suite, [suite.prompt_for(subject)], baseline=baseline)
        return self.attributes(images, axis, suite.filter)

    # -- counterfactual prompts ------------------------------------------------------------------

    def counterfactual_suite(self, suite: Suite, subject: str) -> Suite:
        """``suite`` with its ``counterfactuals: llm`` axes phrased for ``subject``: from the
        lock file beside the suite, written with --t2i-llm when missing (``_prompt_lock``).
        The lock is read once per process; a valid one never loads the LLM."""
        if not any(axis.counterfactuals_from_llm for axis in suite.axes.values()):
            return suite
        from ._prompt_lock import locked_counterfactuals, requirements

        key = (suite.path, repr(requirements(suite)))
        if key not in self._prompt_locks:
            self._prompt_locks[key] = locked_counterfactuals(
                suite, llm_model=self.settings.llm, load_llm=lambda: self.llm,
                update=self.settings.update_locks)
        return self._prompt_locks[key].apply(suite, subject)

    # -- methods ------------------------------------------------------------------------------

    def biasconnect(self, suite: Suite | str | os.PathLike, subject: str, *,
                    axes: Sequence[str] | None = None, mitigate: Sequence[str] | None = None,
                    baseline: bool = False) -> Any:
        """BiasConnect's IS matrix for ``subject``; ``suite`` may be a suite file's path, so
        Python tests reuse the axes and counterfactuals a YAML suite declares. ``mitigate``
        computes only those rows (fewer images)."""
        from .methods.biasconnect import intersectional_sensitivity_for
        from .suite.load import load_suite

        if not hasattr(suite, "axes"):
            suite = load_suite(Path(suite))
        return intersectional_sensitivity_for(self, self.counterfactual_suite(suite, subject),
                                              subject, axes=axes, mitigate=mitigate, baseline=baseline)

    def intermit(self, suite: Suite | str | os.PathLike, subject: str, *,
                 priority: dict[str, float] | None = None, epsilon: float | None = None,
                 max_steps: int | None = None) -> Any:
        """InterMit (BiasConnect Algorithm 1) with prompt-modification mitigation for
        ``subject``: which axes to mitigate, in what order, and how far tau falls."""
        from .methods.intermit import DEFAULT_EPSILON, intermit

        suite = self.counterfactual_suite(_suite(suite), subject)
        return intermit(self, suite, subject, priority=priority,
                        epsilon=DEFAULT_EPSILON if epsilon is None else epsilon,
                        max_steps=max_steps)

    def mitigation_effect(self, suite: Suite | str | os.PathLike, subject: str, *,
                          axes: Sequence[str] | None = None) -> Any:
        """IS_mit per axis: baseline model vs candidate on the subject's prompt, paired seeds
        (the fine-tune merge gate, BiasConnect A.5/A.9)."""
        from .methods.gate import mitigation_effect_for

        return mitigation_effect_for(self, _suite(suite), subject, axes=axes)


def _in_order(statements: dict[str, str], choices: Sequence[str]) -> list[str] | None:
    """A suite's caption per choice, in the choices' order (None: the answerer's default)."""
    return [statements[choice] for choice in choices] if statements else None


def _suite(suite: Suite | str | os.PathLike) -> Suite:
    """A loaded suite, or the suite file at that path."""
    from .suite.load import load_suite

    return suite if hasattr(suite, "axes") else load_suite(Path(suite))


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
            model = self._facade.classifier_model(self.axis)
            choices = getattr(model, "labels", None)
            if choices is None:
                raise TypeError(f"pass choices= for the {self.axis!r} classifier")
        return self._facade.classify(self.axis, images, choices)
