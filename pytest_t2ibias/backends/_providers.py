"""Who makes the backends: pytest's hooks inside a test run, the built-ins in a script.

The facade asks a provider for a generator, a VQA model, a classifier or an LLM by model id;
it never knows whether a user's ``conftest.py`` answered or the Hugging Face built-ins did.
"""

from __future__ import annotations

from typing import Any

from .._settings import Settings
from ._source import ModelSource


class BuiltinBackends:
    """The Hugging Face backends, lazily loaded (``_lazy``), configured by ``Settings``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def generator(self, model: str, role: str, options: dict[str, Any] | None = None) -> Any:
        from ._lazy import lazy_generator

        audit = role == "candidate" and self.settings.images == model
        origin = "--t2i-images" if audit else (
            "--t2i-model" if role == "candidate" else "--t2i-baseline-model")
        if audit:  # a folder of images, no model to resolve
            return lazy_generator(model, self.settings, origin=origin, options=options)
        return lazy_generator(self._source(model), self.settings, origin=origin, options=options)

    def vqa(self, model: str) -> Any:
        from ._lazy import lazy_answerer

        return lazy_answerer(self._source(model), self.settings, origin="--t2i-vqa")

    def classifier(self, axis: str, model: str) -> Any:
        from ._lazy import lazy_classifier

        return lazy_classifier(self._source(model), self.settings, axis=axis,
                               origin=f"--t2i-classifier={axis}=...")

    def _source(self, model: str) -> ModelSource:
        """The id a hook was given, resolved once: every backend below reads its fields."""
        return ModelSource.of(model, offline=self.settings.offline)

    def llm(self, model: str) -> Any:
        from ._lazy import loading_of
        from .llm import CausalLM

        return CausalLM.from_pretrained(model, origin="--t2i-llm",
                                        **loading_of(self.settings, self.settings.llm_options))


class HookBackends:
    """Backends from the ``pytest_t2ibias_make_*`` hooks: a user's first, built-ins last."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.hook = config.pluginmanager.hook

    def generator(self, model: str, role: str, options: dict[str, Any] | None = None) -> Any:
        return self.hook.pytest_t2ibias_make_generator(config=self.config, model=model, role=role,
                                                       options=dict(options or {}))

    def vqa(self, model: str) -> Any:
        return self.hook.pytest_t2ibias_make_vqa(config=self.config, model=model)

    def classifier(self, axis: str, model: str) -> Any:
        return self.hook.pytest_t2ibias_make_classifier(config=self.config, axis=axis, model=model)

    def llm(self, model: str) -> Any:
        return self.hook.pytest_t2ibias_make_llm(config=self.config, model=model)
