"""Built-in backends: Hugging Face generators, answerers and language models, and folders.

The names load on first access (PEP 562 ``__getattr__``): the pytest plugin imports this
package in every pytest run of the environment, and most of these modules import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._exports import lazy_exports

if TYPE_CHECKING:
    from ..errors import BackendError
    from ._base import Answerer, Generator, LanguageModel
    from ._fingerprint import model_fingerprint
    from ._hf import resolve_device, resolve_dtype
    from .classifier import ClassifierAnswerer
    from .folder import FolderImages, prompt_slug
    from .generator import DiffusersGenerator
    from .llm import CausalLM
    from .vqa import ClipAnswerer, GenerativeAnswerer, load_answerer

_HOME = {
    "Answerer": "pytest_t2ibias.backends._base",
    "BackendError": "pytest_t2ibias.errors",
    "CausalLM": "pytest_t2ibias.backends.llm",
    "ClassifierAnswerer": "pytest_t2ibias.backends.classifier",
    "ClipAnswerer": "pytest_t2ibias.backends.vqa",
    "DiffusersGenerator": "pytest_t2ibias.backends.generator",
    "FolderImages": "pytest_t2ibias.backends.folder",
    "GenerativeAnswerer": "pytest_t2ibias.backends.vqa",
    "Generator": "pytest_t2ibias.backends._base",
    "LanguageModel": "pytest_t2ibias.backends._base",
    "load_answerer": "pytest_t2ibias.backends.vqa",
    "model_fingerprint": "pytest_t2ibias.backends._fingerprint",
    "prompt_slug": "pytest_t2ibias.backends.folder",
    "resolve_device": "pytest_t2ibias.backends._hf",
    "resolve_dtype": "pytest_t2ibias.backends._hf",
}

__all__ = sorted(_HOME)

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
