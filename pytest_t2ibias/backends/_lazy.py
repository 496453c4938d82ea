"""Backends that load their weights on the first cache miss, not before.

A cache key needs the backend's fingerprint; these compute it from the model's files (weights
hashed, configs read) without building the model, so a fully cached run loads nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._settings import AUTO, Settings
from .._types import ImageRequest
from ._fingerprint import settings_fingerprint
from ._source import ModelSource

_CPU_DTYPES = {"float32": "torch.float32", "fp32": "torch.float32", "float16": "torch.float16",
               "fp16": "torch.float16", "half": "torch.float16", "bfloat16": "torch.bfloat16",
               "bf16": "torch.bfloat16"}


def _no_gpu_here() -> bool:
    """True when no CUDA device can be visible, known without importing torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return True
    return not (Path("/proc/driver/nvidia").exists() or Path("/dev/nvidia0").exists()
                or Path("/dev/nvidiactl").exists())


def visible_gpu_count() -> int:
    """CUDA GPUs this process may use, known without importing torch: the entries of
    ``CUDA_VISIBLE_DEVICES`` when set, else the driver's list (``/proc/driver/nvidia/gpus``)."""
    if _no_gpu_here():
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([entry for entry in visible.split(",") if entry.strip()])
    gpus = Path("/proc/driver/nvidia/gpus")
    return len(list(gpus.iterdir())) if gpus.is_dir() else 1


def dtype_name(device: str | None, dtype: str | None) -> str:
    """``str(resolve_dtype(dtype, resolve_device(device)))`` for the cache key, without torch
    where the answer is certain (a CPU run, or an explicit dtype): a warm run loads no torch."""
    text = (dtype or "auto").strip().lower().removeprefix("torch.")
    if text in _CPU_DTYPES:
        return _CPU_DTYPES[text]
    device_text = (device or "auto").strip().lower()
    if text == "auto" and "torch" not in sys.modules and (
            device_text == "cpu" or (device_text == "auto" and _no_gpu_here())):
        return "torch.float32"
    from ._hf import resolve_device, resolve_dtype

    return str(resolve_dtype(dtype, resolve_device(device)))


def loading_of(settings: Settings, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``Loading`` keywords (``_hf.Loading``) the options say, for any ``from_pretrained``;
    ``options``: a judge's or LLM's loading options (``--t2i-vqa-option``...), a ``revision``
    among them its revision."""
    extra = dict(options or {})
    revision = extra.pop("revision", None)
    return dict(device=settings.device, dtype=settings.dtype, offline=settings.offline,
                allow_pickle=settings.allow_pickle,
                **({"revision": revision} if revision is not None else {}),
                **({"options": extra} if extra else {}))


def _options_key(options: dict[str, Any]) -> dict[str, Any]:
    """A judge's loading options as its cache key reads them: set only (old keys stay
    valid), the revision left to the model's fingerprint (a hub revision's commit)."""
    key = {k: v for k, v in options.items() if k != "revision"}
    return {"options": key} if key else {}


def _version(package: str) -> str | None:
    """A package's installed version (a default read at run time depends on it), no import."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _batch_option(size: int | str | None) -> dict[str, Any]:
    """``batch_size=`` for a backend's loader, or nothing (its own default)."""
    return {} if size is None else {"batch_size": size}


def device_of(backend: Any) -> str | None:
    """``str`` of a loaded backend's ``device`` (``cuda:0``, ``cpu``, ``mps``); None when
    nothing is loaded or it says none."""
    device = getattr(backend, "device", None) if backend is not None else None
    return None if device is None else str(device)


def device_record(backend: Any) -> dict[str, str]:
    """Where a backend's model ran, for the run header: ``device`` (``cuda:0``, ``cpu``,
    ``mps``) and, on a GPU, ``gpu`` (its name); empty when nothing was loaded (a warm run)
    or a hook's backend says nothing."""
    used = getattr(backend, "device_used", None)
    device = used() if callable(used) else device_of(backend)
    if device is None:
        return {}
    record = {"device": device}
    if device.startswith("cuda") and "torch" in sys.modules:  # loaded there: torch is in
        import torch

        record["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return record


class _Once:
    """Builds a backend the first time it is needed, then keeps it."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self._value: Any = None
        self._error: BaseException | None = None

    @property
    def value(self) -> Any:
        """The backend if it has been built, else None (never builds it)."""
        return self._value

    def __call__(self) -> Any:
        """The backend; a load that failed fails again at once, without loading again (a
        broken model costs one load a session, and every check says the same paragraph)."""
        if self._error is not None:  # said in full once; later checks get its first clause
            raise _again(self._error)
        if self._value is None:
            try:
                self._value = self._load()
            except Exception as error:
                self._error = error
                raise
        return self._value


def _again(error: BaseException) -> BaseException:
    """A load failure already reported in full, for the next check that needs the model:
    its first sentence, so a log says the paragraph once a session, not once a check."""
    from ..errors import BackendError

    if not isinstance(error, BackendError):
        return error.with_traceback(None)
    first = str(error).split(". ", 1)[0].rstrip(".")
    if first.count("(") != first.count(")"):  # cut inside the library's words: before them
        first = first.split(" (", 1)[0]
    return BackendError(f"{first} (the first check that needed it said why in full)",
                        original=error.original, first=error)


def _readers_of(source: ModelSource, settings: Settings) -> list:
    """The pipeline's tokenizers (a folder's own files, never the hub), each read through
    the memo beside the cache: a warm run loads none of them (issue #36)."""
    from .readings import memo_folder, pipeline_readers

    return pipeline_readers(source.spec, memo_folder(settings.cache_dir, settings.no_cache))


def _load_pipeline(source: ModelSource, settings: Settings, origin: str, options: dict[str, Any]):
    from .generator import DiffusersGenerator

    return DiffusersGenerator.from_pretrained(
        source, batch_size=settings.batch_size.generator, origin=origin, model_options=options,
        batch_memo=batch_memo_folder(settings), **loading_of(settings))


def batch_memo_folder(settings: Settings) -> Path | None:
    """Where an ``auto`` batch's measured cost an image is remembered: ``<cache>/batches``
    (None with ``--t2i-no-cache``: every run probes)."""
    return None if settings.no_cache or settings.cache_dir is None else Path(settings.cache_dir) / "batches"


def steps_within_schedule(source: ModelSource, steps: int | None) -> None:
    """Steps past the scheduler's ``num_train_timesteps`` are an error naming the option and
    the limit, read from its config (no weights loaded), not diffusers' traceback mid-run."""
    scheduler = source.config("scheduler/scheduler_config.json")
    limit = scheduler.get("num_train_timesteps")
    if steps and isinstance(limit, int) and steps > limit:
        from ..errors import BackendError

        raise BackendError(
            f"--t2i-steps={steps} (or the suite's steps) is more denoising steps than the "
            f"{limit} timesteps {scheduler.get('_class_name', 'the scheduler')} of {source} was "
            f"trained on (num_train_timesteps): a schedule cannot take more steps than that. "
            f"Use --t2i-steps={limit} or fewer.")


class LazyDiffusersGenerator:
    """A ``Generator`` whose pipeline loads on the first image no cache holds."""

    def __init__(self, model: str | ModelSource, settings: Settings, *, origin: str,
                 steps: int | None = None, guidance_scale: float | None = None,
                 height: int | None = None, width: int | None = None,
                 base: _Once | None = None, readers: _Once | None = None,
                 options: dict[str, Any] | None = None) -> None:
        from .own_sampling import own_sampling_of

        self.options = dict(options or {})
        self.source = source = ModelSource.of(model, revision=self.options.get("revision"),
                                              offline=settings.offline)
        """The model resolved once (at the revision its options pin): its configs and
        fingerprint, shared by ``with_options``."""
        self.model = source.spec
        self.settings = settings
        self.origin = origin
        """``--t2i-model-option`` keywords for ``from_pretrained`` (``parse_model_options``)."""
        self.own = own_sampling_of(source)
        """The pipeline's own sampling, read from its files: what a request that sets
        nothing gets (``None`` where unknown: the loaded pipeline's, never a guess)."""
        self.steps = steps or self.own.steps
        self.guidance_scale = self.own.guidance if guidance_scale is None else guidance_scale
        self.height = height
        self.width = width
        self._base = base or _Once(lambda: _load_pipeline(source, settings, origin, self.options))
        self._configured = _Once(self._configure)
        self._readers = readers or _Once(lambda: _readers_of(source, settings))
        steps_within_schedule(source, self.steps)
        # the revision is in the model's fingerprint (the commit it resolved to)
        options = {k: v for k, v in self.options.items() if k not in ("dtype", "revision")}
        self.fingerprint = settings_fingerprint({
            "model": source.fingerprint,
            "pipeline": source.config("model_index.json"),
            "scheduler": source.config("scheduler/scheduler_config.json"),
            "steps": self.steps,
            "guidance_scale": self.guidance_scale,
            "size": [height, width] if height or width else None,
            "own_size": [self.own.height, self.own.width],
            "diffusers": _version("diffusers") if None in (self.steps, self.guidance_scale) else None,
            "dtype": dtype_name(settings.device, self.options.get("dtype", settings.dtype)),
            **({"options": options} if options else {}),  # set only: old keys stay valid
        })

    def _configure(self):
        from .generator import DiffusersGenerator

        base = self._base()
        return DiffusersGenerator(
            base.pipeline, model_fingerprint=base.model_fingerprint, steps=self.steps,
            guidance_scale=self.guidance_scale, height=self.height, width=self.width,
            batch_size=base.batch.size or AUTO, device=base.device, dtype=base.dtype,
            offload=base.offload, options=base.options, batch_memo=base.batch_memo)

    def with_options(self, *, steps: int | None = None, guidance_scale: float | None = None,
                     height: int | None = None, width: int | None = None) -> LazyDiffusersGenerator:
        """The same pipeline (loaded at most once) under other sampling settings."""
        return LazyDiffusersGenerator(
            self.source, self.settings, origin=self.origin, steps=steps or self.steps,
            guidance_scale=self.guidance_scale if guidance_scale is None else guidance_scale,
            height=height or self.height, width=width or self.width, base=self._base,
            readers=self._readers, options=self.options)

    def prompt_problems(self, prompts: list[str]) -> dict[str, str]:
        """Prompts its tokenizers cannot read whole -> why; read from the pipeline's folder
        (no weights loaded), so a fully cached run still says it, from the readings' memo."""
        from .readings import problems

        return problems(self._readers(), prompts)

    def generate(self, requests: list[ImageRequest]):
        return self._configured().generate(requests)

    def loaded(self):
        """The ``DiffusersGenerator`` itself (loading it now): for h-space read-outs."""
        return self._configured()

    def device_used(self) -> str | None:
        """Where the loaded pipeline runs; None: not loaded (every image came from the cache)."""
        return device_of(self._base.value)

    def __repr__(self) -> str:
        return f"LazyDiffusersGenerator({self.model!r}, steps={self.steps}, guidance={self.guidance_scale})"


class LazyAnswerer:
    """An ``Answerer`` (VQA or classifier) whose model loads on the first uncached answer."""

    def __init__(self, model: str | ModelSource, kind: str, load: Callable[[], Any], *,
                 offline: bool, options: dict[str, Any] | None = None) -> None:
        options = dict(options or {})
        source = ModelSource.of(model, revision=options.get("revision"), offline=offline)
        self.model = source.spec
        self._backend = _Once(load)
        self.fingerprint = settings_fingerprint({
            "model": source.fingerprint,
            "kind": kind,
            "config": source.config("config.json"),
            **_options_key(options),
        })

    def device_used(self) -> str | None:
        """Where the loaded model runs; None: not loaded (every answer came from the cache)."""
        return device_of(self._backend.value)

    @property
    def labels(self):
        return getattr(self._backend(), "labels", None)

    def score(self, images, question, choices, statements=None):
        return self._backend().score(images, question, choices, statements)

    def embed_images(self, images):
        """The loaded judge's image embeddings (a contrastive judge's; ``metrics.costs``)."""
        return self._embedder().embed_images(images)

    def embed_texts(self, texts):
        return self._embedder().embed_texts(texts)

    def _embedder(self):
        from ..errors import BackendError

        backend = self._backend()
        if not hasattr(backend, "embed_images"):
            raise BackendError(f"the judge {self.model} ({type(backend).__name__}) has no image "
                               f"embeddings: the cost checks that read embeddings (CLIPScore, "
                               f"Vendi, KID) need a contrastive judge's (CLIP, SigLIP); "
                               f"give --t2i-vqa such a model")
        return backend


def lazy_generator(model: str | ModelSource, settings: Settings, *, origin: str,
                   options: dict[str, Any] | None = None):
    """``options``: the plan's loading keywords for this model (``Plan.options``)."""
    if origin == "--t2i-images":
        from .folder import FolderImages

        return FolderImages(str(model))
    return LazyDiffusersGenerator(model, settings, origin=origin, options=options)


def lazy_answerer(model: str | ModelSource, settings: Settings, *, origin: str) -> LazyAnswerer:
    options = settings.vqa_options or {}
    source = ModelSource.of(model, revision=options.get("revision"), offline=settings.offline)

    def load():
        from .vqa import load_answerer  # torch: only when an answer is not cached

        return load_answerer(source, origin=origin, **loading_of(settings, options),
                             **_batch_option(settings.batch_size.vqa))

    return LazyAnswerer(source, "vqa", load, offline=settings.offline, options=options)


def lazy_classifier(model: str | ModelSource, settings: Settings, *, axis: str,
                    origin: str) -> LazyAnswerer:
    options = settings.classifier_options or {}
    source = ModelSource.of(model, revision=options.get("revision"), offline=settings.offline)

    def load():
        from .classifier import (
            ClassifierAnswerer,  # torch: only when an answer is not cached
        )

        return ClassifierAnswerer.from_pretrained(source, origin=origin,
                                                  **loading_of(settings, options),
                                                  **_batch_option(settings.batch_size.classifier))

    return LazyAnswerer(source, f"classifier:{axis}", load, offline=settings.offline,
                        options=options)


