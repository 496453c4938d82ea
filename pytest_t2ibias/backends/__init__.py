"""Built-in backends: Hugging Face generators, answerers and language models, and folders."""

from ._base import Answerer, Generator, LanguageModel
from ._errors import BackendError
from ._fingerprint import model_fingerprint
from ._hf import resolve_device, resolve_dtype
from .classifier import ClassifierAnswerer
from .folder import FolderImages, prompt_slug
from .generator import DiffusersGenerator
from .llm import CausalLM
from .vqa import ClipAnswerer, GenerativeAnswerer, load_answerer

__all__ = [
    "Answerer",
    "BackendError",
    "CausalLM",
    "ClassifierAnswerer",
    "ClipAnswerer",
    "DiffusersGenerator",
    "FolderImages",
    "GenerativeAnswerer",
    "Generator",
    "LanguageModel",
    "load_answerer",
    "model_fingerprint",
    "prompt_slug",
    "resolve_device",
    "resolve_dtype",
]
