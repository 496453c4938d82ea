"""One place for the Hugging Face loading conventions: kwargs, device, dtype, and errors.

diffusers >= 0.40 and transformers 5 take ``dtype=``; older releases take ``torch_dtype=``.
Every ``from_pretrained`` in the backends goes through :func:`load_pretrained`, so a model
that cannot be loaded is a :class:`BackendError` naming the model, the option and the fix.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch

from ..errors import BackendError
from ._source import ModelSource

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
SAFETENSORS_SUFFIX = ".safetensors"

# First release of each library whose from_pretrained takes ``dtype=``.
_DTYPE_KWARG_SINCE = {"diffusers": (0, 40), "transformers": (4, 56)}

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
}


def _release(package: str) -> tuple[int, ...]:
    try:
        text = version(package)
    except PackageNotFoundError:
        return (0,)
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def dtype_kwarg(loader: Any) -> str:
    """``"dtype"`` or ``"torch_dtype"``: what ``loader.from_pretrained`` calls the dtype."""
    package = getattr(loader, "__module__", "").split(".")[0]
    since = _DTYPE_KWARG_SINCE.get(package)
    if since is None or _release(package) >= since:
        return "dtype"
    return "torch_dtype"


def pretrained_kwargs(
    loader: Any,
    *,
    revision: str | None = None,
    dtype: torch.dtype | None = None,
    offline: bool = False,
    allow_pickle: bool = False,
    weights: bool = True,
) -> dict[str, Any]:
    """The keyword arguments for ``loader.from_pretrained`` under our conventions.

    ``weights=False`` is for tokenizers and processors, which take neither dtype nor
    ``use_safetensors``.
    """
    kwargs: dict[str, Any] = {"local_files_only": offline}
    if revision is not None:
        kwargs["revision"] = revision
    if weights:
        # None lets the library fall back to pickle weights when no safetensors exist.
        kwargs["use_safetensors"] = None if allow_pickle else True
        if dtype is not None:
            kwargs[dtype_kwarg(loader)] = dtype
    return kwargs


def resolve_device(spec: str | torch.device | None = "auto", *, origin: str = "--t2i-device") -> torch.device:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps`` as a ``torch.device``.

    ``auto`` is CUDA when available, else Apple's ``mps``, else the CPU; under pytest-xdist
    worker ``gwK`` gets GPU ``K mod device_count`` so parallel workers spread over the GPUs
    (more workers than GPUs share them: the run header says so, ``gpu_sharing_line``).
    """
    if isinstance(spec, torch.device):
        return spec
    text = (spec or "auto").strip().lower()
    if text == "auto":
        if not torch.cuda.is_available():
            return torch.device("mps") if _mps_available() else torch.device("cpu")
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        index = int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0
        return torch.device("cuda", index % torch.cuda.device_count())
    if text == "cpu":
        return torch.device("cpu")
    if text == "mps":
        if not _mps_available():
            raise BackendError(f"{origin}={spec}: Apple's mps device is not available here; use "
                               f"{origin}=cpu or auto")
        return torch.device("mps")
    if text == "cuda" or text.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise BackendError(f"{origin}={spec}: CUDA is not available here; use {origin}=cpu or auto")
        index_text = text.partition(":")[2]
        if index_text and not index_text.isdigit():
            raise BackendError(f"{origin}={spec}: expected cuda:N with N a GPU index")
        if index_text and int(index_text) >= torch.cuda.device_count():
            raise BackendError(
                f"{origin}={spec}: only {torch.cuda.device_count()} GPU(s) visible "
                f"(cuda:0..cuda:{torch.cuda.device_count() - 1})"
            )
        return torch.device(text)
    raise BackendError(f"{origin}={spec}: expected auto, cpu, cuda, cuda:N or mps")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_dtype(
    spec: str | torch.dtype | None, device: torch.device, *, origin: str = "--t2i-dtype"
) -> torch.dtype:
    """``auto`` is float32 on CPU (half precision is slow and lossy there) and bfloat16 on GPUs
    that support it, else float16."""
    if isinstance(spec, torch.dtype):
        return spec
    text = (spec or "auto").strip().lower()
    if text == "auto":
        if device.type != "cuda":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if text.startswith("torch."):
        text = text[len("torch."):]
    if text not in _DTYPES:
        raise BackendError(f"{origin}={spec}: expected auto, float32, float16 or bfloat16 "
                           f"(or fp32, fp16, half, bf16)")
    return _DTYPES[text]


def check_source(
    path_or_id: str | os.PathLike,
    *,
    kind: str,
    origin: str,
    marker: str,
    allow_pickle: bool = False,
    offline: bool = False,
    revision: str | None = None,
) -> None:
    """Fail early and clearly on the common mistakes, before the library gets to them.

    ``marker`` is the file that makes a directory a model of this ``kind``
    (``model_index.json`` for a diffusers pipeline, ``config.json`` for transformers).
    """
    source = ModelSource.of(path_or_id)
    text = source.spec
    if source.path is not None:
        path = source.path
        if not path.exists():
            missing = "" if path.is_absolute() else f" {Path.cwd() / path}"
            raise BackendError(
                f"{origin}={text}: no such directory{missing}. Pass an existing local "
                f"{kind} directory (saved with save_pretrained) or a Hugging Face hub id."
            )
        if not path.is_dir() or not (path / marker).is_file():
            raise BackendError(
                f"{origin}={text}: not a {kind} directory (no {marker} in it). Point it at "
                f"the folder written by save_pretrained, or at a hub id."
            )
        if not allow_pickle:
            files = [p for p in path.rglob("*") if p.is_file()]
            has_safetensors = any(p.suffix == SAFETENSORS_SUFFIX for p in files)
            pickled = sorted(str(p.relative_to(path)) for p in files if p.suffix in PICKLE_SUFFIXES)
            if pickled and not has_safetensors:
                raise BackendError(
                    f"{origin}={text}: only pickle weights ({', '.join(pickled[:3])}), no "
                    f".safetensors. Loading pickle runs arbitrary code: convert the weights "
                    f"to safetensors, or pass --t2i-allow-pickle if you trust this model."
                )
        return
    if offline:
        from huggingface_hub import snapshot_download

        try:
            snapshot_download(text, revision=revision, local_files_only=True)
        except Exception as exc:  # any failure here means "not cached"
            at = f"@{revision}" if revision else ""
            raise BackendError(
                f"{origin}={text}{at}: not in the local Hugging Face cache and offline mode "
                f"(--t2i-offline) is on. Download it first (`hf download {text}`) or drop "
                f"--t2i-offline.",
                original=exc,
            ) from None


@contextmanager
def loading_errors(path_or_id: str | os.PathLike, *, kind: str, origin: str,
                   offline: bool = False, diagnose: Any = None,
                   given: dict[str, Any] | None = None) -> Iterator[None]:
    """Re-raise any loading failure as a :class:`BackendError` with a hint of what to do;
    ``offline``: whether --t2i-offline was given (a hint never names an option not used);
    ``diagnose(path, given)``: what really failed in a local folder, when it can tell (a
    missing component), which wins over a guess from the library's words."""
    try:
        yield
    except BackendError:
        raise
    except Exception as exc:  # every library error becomes one readable message
        source = ModelSource.of(path_or_id)
        text = source.spec
        found = None
        if diagnose is not None and source.folder is not None:
            try:
                found = diagnose(source.folder, dict(given or {}))
            except Exception:  # a diagnosis must never hide the error itself
                found = None
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        # diffusers points at "the stacktrace above", which the report does not print
        detail = detail.replace(" Please check out the root cause in the stacktrace above.", "")
        lowered = str(exc).lower()
        if found:
            hint = found
        elif "safetensors" in lowered:
            hint = "the model has no .safetensors weights: convert them, or pass --t2i-allow-pickle if you trust it"
        elif "offline" in lowered or "local_files_only" in lowered or "cache" in lowered:
            hint = (f"the files of hub id {text} are not in the local Hugging Face cache: "
                    f"download them first (`hf download {text}`)"
                    + (" or drop --t2i-offline" if offline else
                       ", or unset HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else ""))
        elif "connect" in lowered or "resolve" in lowered or "timed out" in lowered:
            hint = "the Hugging Face hub is unreachable: check the network, or pass a local directory"
        elif "401" in lowered or "403" in lowered or "gated" in lowered or "not found" in lowered:
            hint = "check the model id and revision, and HF_TOKEN for gated or private models"
        elif source.folder is not None:
            hint = (f"the folder is a saved {kind}; the library's words in parentheses say what "
                    f"failed")
        else:
            hint = f"check that {origin} names a {kind} saved with save_pretrained"
        raise BackendError(
            f"{origin}={text}: could not load the {kind} ({type(exc).__name__}: {detail}). "
            f"Hint: {hint}.",
            original=exc,
        ) from None


def load_pretrained(
    loader: Any,
    path_or_id: str | os.PathLike,
    *,
    kind: str,
    origin: str,
    revision: str | None = None,
    dtype: torch.dtype | None = None,
    offline: bool = False,
    allow_pickle: bool = False,
    weights: bool = True,
    diagnose: Any = None,
    **extra: Any,
) -> Any:
    """``loader.from_pretrained`` with our kwargs (``extra``: more of them, such as the
    ``--t2i-model-option`` component overrides), wrapped so failures read as BackendErrors;
    ``diagnose``: see :func:`loading_errors`."""
    from .threads import apply as give_torch_its_threads

    give_torch_its_threads()  # once, at the first load (issue #36: backends/threads.py)
    kwargs = pretrained_kwargs(
        loader, revision=revision, dtype=dtype, offline=offline, allow_pickle=allow_pickle,
        weights=weights,
    )
    with loading_errors(path_or_id, kind=kind, origin=origin, offline=offline, diagnose=diagnose,
                        given=extra), _library_bars_off(), _pil_fallback_quiet():
        return loader.from_pretrained(os.fspath(path_or_id), **kwargs, **extra)


TORCHVISION_FALLBACK = "requires torchvision (not installed); falling back to"
"""transformers' warning when an image processor falls back to its PIL twin: on CPU without
torchvision that twin is the processor we want (the same preprocessing), so the advice to
install torchvision is noise in every run's log (#27)."""


class _NotTheFallbackWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return TORCHVISION_FALLBACK not in record.getMessage()


@contextmanager
def _pil_fallback_quiet() -> Iterator[None]:
    """Drop that one warning while a model loads (a diffusers pipeline resolves its parts'
    processor classes then; transformers warns once a process); every other warning stays."""
    logger = logging.getLogger("transformers.utils.import_utils")
    quiet = _NotTheFallbackWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


@contextmanager
def _library_bars_off() -> Iterator[None]:
    """diffusers' and transformers' own loading bars off while a model loads (a pipeline
    loads transformers parts too; the plugin's progress line says what is happening), then
    back as the user had them."""
    turned_off = []
    for library in ("diffusers", "transformers"):
        bars = sys.modules.get(f"{library}.utils.logging")
        if bars is not None and bars.is_progress_bar_enabled():
            bars.disable_progress_bar()
            turned_off.append(bars)
    try:
        yield
    finally:
        for bars in turned_off:
            bars.enable_progress_bar()


@dataclass(frozen=True)
class Loading:
    """How any backend loads its weights; every ``from_pretrained`` takes these keywords."""

    revision: str | None = None
    device: str | torch.device = "auto"
    dtype: str | torch.dtype | None = "auto"
    offline: bool = False
    allow_pickle: bool = False
    options: dict[str, Any] | None = None
    """A judge's or LLM's loading options (``--t2i-vqa-option``...; ``model_kwargs``)."""

    def source(self, kind: str, origin: str) -> dict[str, Any]:
        """The keywords ``check_source``, ``load_pretrained`` and friends share."""
        return dict(kind=kind, origin=origin, revision=self.revision, offline=self.offline)


@dataclass(frozen=True)
class LoadedModel:
    """A model, its processor or tokenizer, where it runs, and its weights' fingerprint."""

    model: Any
    processor: Any
    device: torch.device
    fingerprint: str


def load_model_and_processor(
    model_loader: Any,
    processor_loader: Any,
    path_or_id: str | os.PathLike,
    *,
    kind: str,
    origin: str,
    loading: Loading,
) -> LoadedModel:
    """The one loading path of every transformers backend: check the source, load weights
    on the resolved device and dtype, load the processor, fingerprint the files (once a
    source: a lazy backend's cache key read them already)."""
    options = dict(loading.options or {})
    if "dtype" in options:  # a judge's own dtype wins over --t2i-dtype, as a pipeline's does
        loading = replace(loading, dtype=options.pop("dtype"))
    source = ModelSource.of(path_or_id, revision=loading.revision, offline=loading.offline)
    common = loading.source(kind, origin)
    check_source(path_or_id, marker="config.json", allow_pickle=loading.allow_pickle, **common)
    torch_device = resolve_device(loading.device)
    model = load_pretrained(model_loader, path_or_id, dtype=resolve_dtype(loading.dtype, torch_device),
                            allow_pickle=loading.allow_pickle, **common,
                            **model_kwargs(options, origin=origin))
    processor = load_pretrained(processor_loader, path_or_id, weights=False, **common,
                                **processor_kwargs(options))
    placed = placed_by_loader(model)
    if placed is not None:  # device_map or quantization put it there: it must not be moved
        torch_device = placed
    return LoadedModel(model, processor, torch_device, source.fingerprint)


def model_kwargs(options: dict[str, Any], *, origin: str) -> dict[str, Any]:
    """A judge's loading options as transformers' ``from_pretrained`` keywords: 4- and 8-bit
    loading through its own ``BitsAndBytesConfig`` (``quantization_config=``; the bare
    ``load_in_4bit=`` keyword is gone from transformers 5), the rest as given."""
    kwargs = dict(options)
    bits = {key: kwargs.pop(key) for key in ("load_in_4bit", "load_in_8bit") if key in kwargs}
    if any(bits.values()):
        if "quantization_config" in kwargs:
            raise BackendError(f"{origin}: give load_in_4bit/load_in_8bit or a "
                               f"quantization_config, not both")
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            **{key: True for key, on in bits.items() if on})
    return kwargs


def processor_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """What of a judge's loading options its processor or tokenizer takes too: a model
    whose code is its own has its own processor code."""
    return {key: options[key] for key in ("trust_remote_code",) if key in options}


def placed_by_loader(model: Any) -> torch.device | None:
    """Where ``from_pretrained`` put a model it placed itself (``device_map``, a quantized
    model), which ``.to()`` must not move; None: the backend moves it."""
    if not (getattr(model, "hf_device_map", None) or getattr(model, "is_quantized", False)):
        return None
    device = getattr(model, "device", None)
    return device if isinstance(device, torch.device) else None


def to_device(model: Any, device: torch.device) -> Any:
    """``model.to(device)``, unless its loader placed it (``placed_by_loader``)."""
    return model if placed_by_loader(model) is not None else model.to(device)
