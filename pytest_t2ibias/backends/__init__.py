"""Built-in backends: Hugging Face generators, answerers and language models, and folders.

The names load on first access (PEP 562 ``__getattr__``): the pytest plugin imports this
package in every pytest run of the environment, and most of these modules import torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import Answerer, Generator, LanguageModel
    from ._errors import BackendError
    from ._fingerprint import model_fingerprint
    from ._hf import resolve_device, resolve_dtype
    from .classifier import ClassifierAnswerer
    from .folder import FolderImages, prompt_slug
    from .generator import DiffusersGenerator
    from .llm import CausalLM
    from .vqa import ClipAnswerer, GenerativeAnswerer, load_answerer

_WHERE = {
    "Answerer": "_base",
    "BackendError": "_errors",
    "CausalLM": "llm",
    "ClassifierAnswerer": "classifier",
    "ClipAnswerer": "vqa",
    "DiffusersGenerator": "generator",
    "FolderImages": "folder",
    "GenerativeAnswerer": "vqa",
    "Generator": "_base",
    "LanguageModel": "_base",
    "load_answerer": "vqa",
    "model_fingerprint": "_fingerprint",
    "prompt_slug": "folder",
    "resolve_device": "_hf",
    "resolve_dtype": "_hf",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
