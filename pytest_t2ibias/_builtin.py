"""The built-in Hugging Face backends, registered ``trylast`` so a user's hooks win."""

from __future__ import annotations

import pytest

from ._session import session_of


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_generator(config: pytest.Config, model: str, role: str):
    from .backends._lazy import lazy_generator

    settings = session_of(config).settings
    origin = "--t2i-images" if (role == "candidate" and settings.images) else (
        "--t2i-model" if role == "candidate" else "--t2i-baseline-model")
    return lazy_generator(model, settings, origin=origin)


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_vqa(config: pytest.Config, model: str):
    from .backends._lazy import lazy_answerer

    return lazy_answerer(model, session_of(config).settings, origin="--t2i-vqa")


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_classifier(config: pytest.Config, axis: str, model: str):
    from .backends._lazy import lazy_classifier

    return lazy_classifier(model, session_of(config).settings, axis=axis,
                           origin=f"--t2i-classifier={axis}=...")


@pytest.hookimpl(trylast=True)
def pytest_t2ibias_make_llm(config: pytest.Config, model: str):
    from .backends.llm import CausalLM

    settings = session_of(config).settings
    return CausalLM.from_pretrained(model, device=settings.device, offline=settings.offline,
                                    allow_pickle=settings.allow_pickle, origin="--t2i-llm")
