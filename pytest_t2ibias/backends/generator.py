"""Images from any diffusers ``DiffusionPipeline``, one CPU generator per image.

Each image's initial noise comes from its own ``torch.Generator`` seeded with
``request.noise_seed`` (diffusers docs, "Reproducible pipelines": pass a list of generators
for a batch), so image i's noise is the same whatever the batch size or the other prompts
in it. Its pixels are the same to rounding only: the batched UNet and VAE forwards round in
another order (on toy-sd, CPU, 10 of 64 images had a pixel one level apart between batch 1
and 8; ``validation/batch_pixels.py``), so bitwise equality would cost batching itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from .._types import ImageRequest
from ._batching import AutoBatch, batched, memo_path
from ._fingerprint import settings_fingerprint
from ._hf import Loading, check_source, load_pretrained, resolve_device, resolve_dtype
from ._source import ModelSource

PROBE_STEPS = 2
"""Denoising steps of the ``auto`` batch size's probe: its peak memory per image is a whole
call's (the steps repeat; the decode and text encoders are in it), in a tenth of the time."""


def missing_components(path_or_id: str | os.PathLike[str], given: dict[str, Any]) -> str | None:
    """Why a local pipeline folder failed to load, when a part it needs is not there: the
    components its class requires that ``model_index.json`` lists as absent (saved without
    them, as SD3 without T5) or whose folder holds no files; None when that is not it."""
    import inspect
    from pathlib import Path

    from .._files import read_json

    folder = Path(os.fspath(path_or_id)).expanduser()
    try:
        index = read_json(folder / "model_index.json")
    except (OSError, ValueError):
        return None
    import diffusers

    pipeline_class = getattr(diffusers, str(index.get("_class_name")), None)
    try:
        parameters = inspect.signature(pipeline_class.__init__).parameters if pipeline_class else {}
    except (TypeError, ValueError):
        parameters = {}
    required = [name for name, p in parameters.items()
                if name != "self" and p.default is inspect.Parameter.empty
                and p.kind is p.POSITIONAL_OR_KEYWORD]
    missing = []
    for name in required:
        if name in given:
            continue
        entry = index.get(name)
        listed = isinstance(entry, list) and len(entry) == 2 and entry[1] is not None
        part = folder / name
        if not listed:
            missing.append((name, "listed as absent in model_index.json"))
        elif not part.is_dir() or not any(part.iterdir()):
            missing.append((name, f"{entry[1]}, whose folder {name}/ is missing or empty"))
        elif (part / "config.json").is_file() and not any(
                f.suffix in (".safetensors", ".bin") for f in part.iterdir()):
            missing.append((name, f"{entry[1]}, whose folder {name}/ has no weights"))
    if not missing:
        return None
    parts = "; ".join(f"{name} ({why})" for name, why in missing)
    overrides = " ".join(f"--t2i-model-option {name}=null" for name, _ in missing)
    return (f"the folder is a saved {index.get('_class_name')}, but parts its class needs are "
            f"not in it: {parts}. If the pipeline works without them (SD3 without its T5 "
            f"encoder), load it with {overrides}; otherwise download the missing parts")


def call_defaults(pipeline: Any) -> dict[str, Any]:
    """The pipeline's own ``num_inference_steps`` and ``guidance_scale`` (its ``__call__``'s
    defaults): what it samples with when not told."""
    import inspect

    try:
        parameters = inspect.signature(type(pipeline).__call__).parameters
    except (TypeError, ValueError):
        return {}
    return {name: parameters[name].default for name in ("num_inference_steps", "guidance_scale")
            if name in parameters and parameters[name].default is not inspect.Parameter.empty}


class DiffusersGenerator:
    """A ``Generator`` around a pipeline taking prompt, steps, guidance and generator."""

    def __init__(
        self,
        pipeline: Any,
        *,
        model_fingerprint: str,
        steps: int | None = None,
        guidance_scale: float | None = None,
        height: int | None = None,
        width: int | None = None,
        batch_size: int | str = 8,
        device: str | torch.device = "cpu",
        dtype: str | torch.dtype | None = None,
        offload: bool = False,
        options: dict[str, Any] | None = None,
        batch_memo: Path | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.dtype = None if dtype is None else resolve_dtype(dtype, self.device)
        self.offload = offload
        if offload:  # diffusers moves each model to the GPU for its forward, then back
            self.pipeline = pipeline
            if getattr(pipeline, "_offload_device", None) is None:
                pipeline.enable_model_cpu_offload(device=self.device)
        else:
            self.pipeline = pipeline.to(self.device)
            if self.dtype is not None and getattr(self.pipeline, "dtype", None) != self.dtype:
                self.pipeline = self.pipeline.to(self.dtype)
        self.pipeline.set_progress_bar_config(disable=True)
        self.model_fingerprint = model_fingerprint
        own = call_defaults(pipeline)
        self.steps = steps or own.get("num_inference_steps")
        self.guidance_scale = own.get("guidance_scale") if guidance_scale is None else guidance_scale
        self.height = height
        self.width = width
        self.batch = AutoBatch(batch_size, role="generator", device=self.device)
        self.batch_memo = batch_memo
        """The folder where an ``auto`` batch's measured cost an image is remembered across
        runs (``_batching.memo_path``; ``<cache>/batches``), None: every run probes."""
        self.fingerprint = settings_fingerprint({
            "model": model_fingerprint,
            "pipeline": type(pipeline).__name__,
            "scheduler": type(pipeline.scheduler).__name__,
            "scheduler_config": dict(pipeline.scheduler.config),
            "steps": self.steps,
            "guidance_scale": self.guidance_scale,
            "height": height,
            "width": width,
            "dtype": str(self.dtype or getattr(pipeline, "dtype", None)),
            **({"options": options} if options else {}),  # set only: old keys stay valid
        })
        self.options = dict(options or {})

    @classmethod
    def from_pretrained(
        cls,
        path_or_id: str | os.PathLike[str],
        *,
        steps: int | None = None,
        guidance_scale: float | None = None,
        height: int | None = None,
        width: int | None = None,
        batch_size: int | str = 8,
        origin: str = "--t2i-model",
        model_options: dict[str, Any] | None = None,
        batch_memo: Path | None = None,
        **loading: Any,
    ) -> DiffusersGenerator:
        """Load a local diffusers directory or hub id (``loading``: the ``Loading`` keywords;
        ``model_options``: ``--t2i-model-option`` keywords for ``from_pretrained``, a
        ``dtype`` winning over ``loading``'s, ``enable_model_cpu_offload`` applied after);
        failures are ``BackendError``s."""
        from diffusers import DiffusionPipeline

        from ..errors import BackendError

        extra = dict(model_options or {})
        offload = bool(extra.pop("enable_model_cpu_offload", False))
        # dtype and revision are loading options under their own names (a model option wins)
        named: dict[str, Any] = {key: extra.pop(key) for key in ("dtype", "revision")
                                 if key in extra}
        how = Loading(**{**loading, **named})
        source = ModelSource.of(path_or_id, revision=how.revision, offline=how.offline)
        common = how.source("diffusers pipeline", origin)
        check_source(source, marker="model_index.json", allow_pickle=how.allow_pickle, **common)
        torch_device = resolve_device(how.device)
        if offload and torch_device.type != "cuda":
            raise BackendError(
                f"--t2i-model-option enable_model_cpu_offload=true: model CPU offload moves each "
                f"part of the pipeline to a GPU for its forward pass, and this run's device is "
                f"{torch_device} (--t2i-device); drop the option here, or run on a CUDA device.")
        torch_dtype = resolve_dtype(how.dtype, torch_device)
        pipeline = load_pretrained(DiffusionPipeline, source, dtype=torch_dtype,
                                   allow_pickle=how.allow_pickle, diagnose=missing_components,
                                   **common, **extra)
        return cls(
            pipeline,
            model_fingerprint=source.fingerprint,
            steps=steps,
            guidance_scale=guidance_scale,
            height=height,
            width=width,
            batch_size=batch_size,
            device=torch_device,
            dtype=torch_dtype,
            offload=offload,
            options={k: v for k, v in (model_options or {}).items()
                     if k not in ("dtype", "revision")},
            batch_memo=batch_memo,
        )

    def generate(self, requests: list[ImageRequest]) -> list[Image.Image]:
        """One image per request, in order; batches may mix prompts freely. A request's own
        sampling (steps, guidance, size, scheduler) wins over this generator's defaults."""
        requests = list(requests)
        images: dict[int, Image.Image] = {}
        groups: dict[tuple[Any, ...], list[int]] = {}
        for position, request in enumerate(requests):
            groups.setdefault(tuple(request.sampling.values()), []).append(position)
        for sampling, positions in groups.items():
            if self.batch.size is None:  # sized on this group's sampling: remembered by it
                self.batch.memo = memo_path(self.batch_memo, self.device, self.fingerprint,
                                            sampling)
            for batch, sampled in batched(
                    positions, self.batch,
                    lambda chunk: (chunk, self._sample([requests[i] for i in chunk])),
                    probe=lambda i: self._sample([requests[i]], steps=PROBE_STEPS)):
                images.update(zip(batch, sampled))
        return [images[i] for i in range(len(requests))]

    def prompt_problems(self, prompts: Sequence[str]) -> dict[str, str]:
        """Prompts its tokenizers cannot read whole -> why (``vocabulary``)."""
        from .readings import prompt_problems
        from .vocabulary import pipeline_of_tokenizers

        return prompt_problems(pipeline_of_tokenizers(self.pipeline), prompts)

    @property
    def batch_size(self) -> int | None:
        """Images a pipeline call takes (None: ``auto``, not sized yet)."""
        return self.batch.size

    def _sample(self, batch: Sequence[ImageRequest], *, steps: int | None = None) -> list[Image.Image]:
        """One pipeline call for requests sharing their sampling (``steps``: cut short, for
        the batch-size probe only)."""
        first = batch[0]
        # CPU generators: the same noise on every device, and per image, not per batch.
        generators = [torch.Generator("cpu").manual_seed(r.noise_seed) for r in batch]
        height, width = first.height or self.height, first.width or self.width
        size = {k: v for k, v in (("height", height), ("width", width)) if v}
        original = self.pipeline.scheduler
        if first.scheduler and first.scheduler != type(original).__name__:
            import diffusers

            scheduler_class = getattr(diffusers, first.scheduler, None)
            if scheduler_class is None:
                from ..errors import BackendError

                raise BackendError(f"scheduler {first.scheduler!r} (the plan's sampling) is no "
                                   f"diffusers scheduler class; name one, e.g. "
                                   f"DPMSolverMultistepScheduler")
            self.pipeline.scheduler = scheduler_class.from_config(original.config)
        chosen = first.steps or self.steps
        steps = min(steps, chosen) if steps and chosen else steps or chosen
        guidance = self.guidance_scale if first.guidance is None else first.guidance
        sampling = {k: v for k, v in (("num_inference_steps", steps), ("guidance_scale", guidance))
                    if v is not None}  # None: the pipeline's own
        try:
            output = self.pipeline(
                prompt=[r.prompt for r in batch],
                generator=generators,
                output_type="pil",
                **sampling,
                **size,
            )
        finally:
            self.pipeline.scheduler = original
        return [image if image.mode == "RGB" else image.convert("RGB") for image in output.images]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({type(self.pipeline).__name__}, steps={self.steps}, "
            f"guidance_scale={self.guidance_scale}, device={self.device})"
        )
