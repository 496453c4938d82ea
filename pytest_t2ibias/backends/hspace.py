"""The denoiser's h-space while sampling, and BGPS' one-forward candidate read-out.

DiffLens (shi2025dissecting) and BGPS (seeds/001, §3.2 "Attribute classifiers", A.5) read a
generated image's attributes off one layer's activation at a given denoising step, long
before the image exists. The layer is ``unet.mid_block`` for a UNet (SD 1.x, SDXL) and, for
the diffusion transformers released now (SD3's MMDiT, Flux, PixArt), the output of the middle
block of the transformer's stack (Flux: double- then single-stream blocks counted as one
stack), its image tokens: the same "middle of the network" a UNet's mid-block is. The layer's
name is in every probe's metadata (``describe()["layer"]``).

The reader drives the pipeline's own ``__call__`` (its own ``encode_prompt``, SDXL's added
conditioning, Flux's packed latents and guidance input, PixArt's resolution binning) and
listens with hooks: a pre-hook on the denoiser records each call's inputs, a hook on the layer
records its output, and an exception raised from a hook ends the call as soon as nothing more
is needed. So every pipeline whose denoiser is a ``unet`` with a ``mid_block`` or a
``transformer`` with ``transformer_blocks`` reads the same way, with no sampling loop copied.
Under classifier-free guidance the denoiser sees the batch ``[uncond, cond]`` (diffusers
concatenates the negative prompt first); the conditional half is the one that depends on the
prompt, so it is the only one kept.

Two read-outs:

* :meth:`HSpaceReader.trajectory_features` — sample each prompt with its own seeded noise,
  exactly as the pipeline does, and keep h at chosen step indices (probe training data).
* :meth:`HSpaceReader.candidate_features` — BGPS' scoring path (Eq. 4): K latents are first
  denoised under a neutral prompt up to step index t (:meth:`HSpaceReader.neutral_latents`,
  which keeps the denoiser's inputs at that step), then every candidate prompt costs ONE
  conditional forward per latent, its prompt inputs (``PROMPT_INPUTS``) swapped in, batched
  across candidates x latents and stopped right after the layer.

Features are the layer's output flattened (channels x height x width for a UNet, tokens x
channels for a transformer), as DiffLens' heads read it; ``pooling="mean"`` averages the
spatial dims (or tokens) instead: channels only, for models whose flattened h is too wide.

A step index i is the i-th denoiser call of the sampling loop, at timestep
``scheduler.timesteps[i]``; index 0 is the pure-noise input. Noise comes from one CPU
``torch.Generator`` per image seeded with its noise seed, like ``DiffusersGenerator``, so
features are the same on every device and whatever the batch.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendError

LAYER = "unet.mid_block"
"""The layer of a UNet pipeline (a transformer's is named per model: ``layer_of``)."""
POOLINGS = ("flatten", "mean")
PROMPT_INPUTS = ("encoder_hidden_states", "pooled_projections", "encoder_attention_mask", "text_embeds")
"""Denoiser inputs made from the prompt (``text_embeds``: SDXL's ``added_cond_kwargs``); the
rest (latents, timestep, size ids, Flux's guidance and position ids) belong to the latent."""
UNBATCHED_INPUTS = ("img_ids", "txt_ids")
"""Flux's position ids: one table for the whole batch, never indexed by image."""


class _StopAfterLayer(Exception):
    """Raised from a hook to end the pipeline's call once what is wanted is recorded."""


@dataclass(frozen=True)
class Layer:
    """Where h is read: the denoiser (``unet`` or ``transformer``) and one of its modules."""

    denoiser: Any
    module: Any
    name: str
    channels_last: bool
    """(batch, tokens, channels) for a transformer; (batch, channels, h, w) for a UNet."""


def layer_of(pipeline: Any) -> Layer:
    """The UNet's mid-block, or the middle block of a diffusion transformer; a pipeline with
    neither is a ``BackendError`` naming its class and what it lacks."""
    kind = type(pipeline).__name__
    unet = getattr(pipeline, "unet", None)
    if unet is not None:
        if getattr(unet, "mid_block", None) is None:
            raise BackendError(
                f"{kind}'s UNet ({type(unet).__name__}) has no mid_block: h-space probes "
                "(DiffLens/BGPS) read a UNet's mid-block output, and this one has none. "
                "Use a pipeline whose UNet has a mid-block, or a committed BGPS lock file.")
        return Layer(unet, unet.mid_block, LAYER, channels_last=False)
    transformer = getattr(pipeline, "transformer", None)
    if transformer is not None:
        stacks = [(name, getattr(transformer, name)) for name in
                  ("transformer_blocks", "single_transformer_blocks")
                  if len(getattr(transformer, name, None) or ()) > 0]
        blocks = [(f"transformer.{name}.{i}", block) for name, stack in stacks
                  for i, block in enumerate(stack)]
        if blocks:
            name, block = blocks[len(blocks) // 2]
            return Layer(transformer, block, name, channels_last=True)
        raise BackendError(
            f"{kind}'s transformer ({type(transformer).__name__}) has no transformer_blocks: "
            "h-space probes read the middle block of a diffusion transformer's stack, and this "
            "one names its blocks otherwise. BGPS cannot search this model; commit a BGPS lock "
            "file searched on a supported one, or drop the BGPS check.")
    raise BackendError(
        f"{kind} has neither a 'unet' nor a 'transformer': h-space probes (DiffLens/BGPS) read "
        "the denoiser's middle layer while sampling, and this pipeline exposes no denoiser "
        "under those names. BGPS supports SD 1.x/2.x, SDXL, SD3, Flux and PixArt pipelines.")


@contextmanager
def capture_layer(layer: Any, images: int | None = None, *, stop_at: int | None = None
                  ) -> Iterator[list]:
    """Record every output of ``layer`` (one tensor per denoiser call).

    ``images``: how many images the call draws; a batch twice that is classifier-free
    guidance's ``[uncond, cond]``, of which the second half is kept. A tuple output (MMDiT and
    Flux blocks return ``(encoder_hidden_states, hidden_states)``) keeps its last element, the
    image tokens. ``stop_at``: end the call (``_StopAfterLayer``) once that many are recorded.
    """
    outputs: list = []

    def hook(module, inputs, output):
        hidden = output[-1] if isinstance(output, tuple) else output
        if images is not None and hidden.shape[0] == 2 * images:
            hidden = hidden[images:]
        outputs.append(hidden.detach().float().cpu())
        if stop_at is not None and len(outputs) >= stop_at:
            raise _StopAfterLayer

    handle = layer.register_forward_hook(hook)
    try:
        yield outputs
    finally:
        handle.remove()


@contextmanager
def capture_inputs(denoiser: Any, *, stop_at: int | None = None) -> Iterator[list]:
    """Record every call's inputs of ``denoiser`` as keywords; with ``stop_at``, end the call
    before the denoiser runs the ``stop_at``-th time (its inputs recorded)."""
    calls: list = []
    signature = inspect.signature(type(denoiser).forward)

    def pre_hook(module, args, kwargs):
        bound = signature.bind(module, *args, **kwargs)
        calls.append({k: v for k, v in bound.arguments.items() if k != "self"})
        if stop_at is not None and len(calls) >= stop_at:
            raise _StopAfterLayer

    handle = denoiser.register_forward_pre_hook(pre_hook, with_kwargs=True)
    try:
        yield calls
    finally:
        handle.remove()


def pool(hidden: Any, pooling: str, *, channels_last: bool = False) -> np.ndarray:
    """(batch, channels, h, w) or (batch, tokens, channels) -> (batch, features): flattened,
    or averaged over space (tokens)."""
    if pooling == "flatten":
        return hidden.reshape(hidden.shape[0], -1).numpy()
    if pooling == "mean":
        if channels_last:
            return hidden.mean(dim=tuple(range(1, hidden.dim() - 1))).numpy()
        return hidden.mean(dim=tuple(range(2, hidden.dim()))).numpy()
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


@dataclass(frozen=True)
class NeutralLatents:
    """K latents denoised under a neutral prompt up to step ``step_index`` (BGPS' z_k at t).

    ``inputs`` are the denoiser's keyword inputs at that step, conditional half only (K rows);
    ``model_input`` the latents among them.
    """

    prompt: str
    noise_seeds: tuple[int, ...]
    step_index: int
    timestep: float
    inputs: dict

    @property
    def model_input(self) -> Any:
        return self.inputs.get("sample", self.inputs.get("hidden_states"))


class HSpaceReader:
    """Reads h-space off a diffusers pipeline with a ``unet`` (mid-block) or a ``transformer``.

    Build it from the ``DiffusersGenerator`` the checks use (:meth:`from_generator`), so the
    probes see the same weights, scheduler, steps, guidance and size, and carry its fingerprint.
    """

    def __init__(
        self,
        pipeline: Any,
        *,
        fingerprint: str,
        steps: int,
        guidance_scale: float,
        height: int | None = None,
        width: int | None = None,
        pooling: str = "flatten",
        batch_size: int = 32,
    ) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.layer = layer_of(pipeline)
        for needed in ("scheduler", "encode_prompt"):
            if not hasattr(pipeline, needed):
                raise BackendError(
                    f"{type(pipeline).__name__} has no {needed!r}: h-space read-out drives a "
                    "diffusers text-to-image pipeline (prompt embeddings, a scheduler).")
        self.pipeline = pipeline
        self.fingerprint = fingerprint
        self.steps = steps
        self.guidance_scale = guidance_scale
        own = own_size(pipeline)
        self.height = height or own
        self.width = width or own
        self.pooling = pooling
        self.batch_size = max(1, batch_size)
        self._timesteps: list | None = None
        self.unet_forwards = 0
        """Denoiser calls made so far (each over a batch; CFG pairs count once)."""
        self.unet_evaluations = 0
        """Image-latents pushed through the denoiser so far (a CFG pair counts once)."""

    @classmethod
    def from_generator(cls, generator: Any, *, pooling: str = "flatten", batch_size: int = 32) -> HSpaceReader:
        """Share a ``DiffusersGenerator``'s pipeline and settings (and fingerprint)."""
        return cls(
            generator.pipeline,
            fingerprint=generator.fingerprint,
            steps=generator.steps,
            guidance_scale=generator.guidance_scale,
            height=generator.height,
            width=generator.width,
            pooling=pooling,
            batch_size=batch_size,
        )

    # -- what a probe must match ----------------------------------------------------------

    @property
    def device(self) -> Any:
        return self.layer.denoiser.device

    @property
    def scheduler_name(self) -> str:
        return type(self.pipeline.scheduler).__name__

    @property
    def scheduler_config(self) -> dict:
        """The scheduler's config as plain JSON values (infinities as strings)."""
        return {k: _jsonable(v) for k, v in dict(self.pipeline.scheduler.config).items()}

    def timesteps(self) -> list:
        """The scheduler's timestep for every step index, as the pipeline sets them at
        ``self.steps`` steps and this size (Flux shifts them by the image's size): read off
        the pipeline's own call, ended before its first denoiser forward."""
        if self._timesteps is None:
            self._call(["a photo"], [0], stop=capture_inputs(self.layer.denoiser, stop_at=1))
            self._timesteps = [_number(t) for t in self.pipeline.scheduler.timesteps]
        return list(self._timesteps)

    def describe(self) -> dict:
        """Everything a probe trained on this reader depends on (saved in its metadata)."""
        return {
            "generator_fingerprint": self.fingerprint,
            "layer": self.layer.name,
            "pooling": self.pooling,
            "steps": self.steps,
            "guidance_scale": self.guidance_scale,
            "height": self.height,
            "width": self.width,
            "scheduler": self.scheduler_name,
            "scheduler_config": self.scheduler_config,
        }

    # -- the pipeline's own call, listened to ------------------------------------------------

    def _call(self, prompts: Sequence[str], noise_seeds: Sequence[int], *, stop: Any) -> None:
        """The pipeline's ``__call__`` on ``prompts`` (one seeded CPU generator per image),
        ended by ``stop``'s hook; every other hook set meanwhile listens."""
        import torch

        generators = [torch.Generator("cpu").manual_seed(int(seed)) for seed in noise_seeds]
        with stop, _quiet_truncation(), torch.no_grad():
            try:
                self.pipeline(prompt=list(prompts), num_inference_steps=self.steps,
                              guidance_scale=self.guidance_scale, generator=generators,
                              height=self.height, width=self.width, output_type="latent")
            except _StopAfterLayer:
                return
        raise BackendError(
            f"{type(self.pipeline).__name__} finished sampling without calling its "
            f"{type(self.layer.denoiser).__name__} as often as the read-out needs: h-space "
            "probes need one denoiser call per step.")

    # -- read-outs --------------------------------------------------------------------------

    def trajectory_features(
        self, prompts: Sequence[str], noise_seeds: Sequence[int], step_indices: Sequence[int]
    ) -> np.ndarray:
        """h at each step index while sampling ``prompts[i]`` from ``noise_seeds[i]``.

        Returns (prompts, len(step_indices), features): the conditional half under guidance.
        Sampling stops after the last index needed (no decoding), so this costs
        ``max(step_indices) + 1`` denoiser calls per batch.
        """
        if len(prompts) != len(noise_seeds):
            raise ValueError(f"{len(prompts)} prompts but {len(noise_seeds)} noise seeds")
        self._check_indices(step_indices)
        last = max(int(i) for i in step_indices)
        rows = []
        for start in range(0, len(prompts), self.batch_size):
            batch = slice(start, start + self.batch_size)
            count = len(prompts[batch])
            stop = capture_layer(self.layer.module, count, stop_at=last + 1)
            with stop as outputs:
                self._call(prompts[batch], noise_seeds[batch], stop=_entered(outputs))
            self.unet_forwards += len(outputs)
            self.unet_evaluations += len(outputs) * count
            rows.append(np.stack([pool(outputs[int(i)], self.pooling, channels_last=self.layer.channels_last)
                                  for i in step_indices], axis=1))
        return np.concatenate(rows) if rows else np.empty((0, len(step_indices), 0), dtype=np.float32)

    def _inputs_at(self, prompts: Sequence[str], noise_seeds: Sequence[int], step_index: int) -> dict:
        """The denoiser's inputs at ``step_index`` of the pipeline's call, conditional half."""
        stop = capture_inputs(self.layer.denoiser, stop_at=step_index + 1)
        with stop as calls:
            self._call(prompts, noise_seeds, stop=_entered(calls))
        self.unet_forwards += step_index
        self.unet_evaluations += step_index * len(prompts)
        return _conditional_half(calls[-1], len(prompts))

    def neutral_latents(self, prompt: str, noise_seeds: Sequence[int], step_index: int) -> NeutralLatents:
        """Denoise K latents under ``prompt`` for ``step_index`` steps (BGPS: "a photo of a person")."""
        self._check_indices([step_index])
        inputs = self._inputs_at([prompt] * len(noise_seeds), noise_seeds, step_index)
        t = self.pipeline.scheduler.timesteps[step_index]
        return NeutralLatents(prompt, tuple(int(s) for s in noise_seeds), step_index, _number(t), inputs)

    def candidate_features(self, prompts: Sequence[str], neutral: NeutralLatents) -> np.ndarray:
        """h_t(x, z_k) for every candidate x and latent z_k: (prompts, K, features).

        One conditional denoiser forward per (candidate, latent), stopped after the layer.
        Only the conditional branch is run: the denoiser treats batch rows independently, so
        the layer's output equals the cond half of a guided [uncond, cond] call.
        """
        import torch

        k = neutral.model_input.shape[0]
        pairs = [(c, j) for c in range(len(prompts)) for j in range(k)]
        features = []
        with torch.no_grad():
            for start in range(0, len(pairs), self.batch_size):
                chunk = pairs[start:start + self.batch_size]
                used = sorted({c for c, _ in chunk})
                prompt_inputs = _conditional_half(self._prompt_inputs([prompts[c] for c in used]), len(used))
                row_of = {c: r for r, c in enumerate(used)}
                inputs = _merged(neutral.inputs, prompt_inputs, k,
                                 latent_rows=[j for _, j in chunk], prompt_rows=[row_of[c] for c, _ in chunk])
                with capture_layer(self.layer.module, stop_at=1) as outputs:
                    try:
                        self.layer.denoiser(**inputs)
                    except _StopAfterLayer:
                        pass
                self.unet_forwards += 1
                self.unet_evaluations += len(chunk)
                features.append(pool(outputs[0], self.pooling, channels_last=self.layer.channels_last))
        flat = np.concatenate(features) if features else np.empty((0, 0), dtype=np.float32)
        return flat.reshape(len(prompts), k, -1)

    def _prompt_inputs(self, prompts: Sequence[str]) -> dict:
        """The denoiser's inputs for ``prompts`` as the pipeline encodes them (its first call,
        ended before the denoiser runs)."""
        stop = capture_inputs(self.layer.denoiser, stop_at=1)
        with stop as calls:
            self._call(prompts, range(len(prompts)), stop=_entered(calls))
        return calls[-1]

    def _check_indices(self, step_indices: Sequence[int]) -> None:
        bad = [i for i in step_indices if not 0 <= int(i) < self.steps]
        if bad:
            raise ValueError(f"step indices {bad} outside 0..{self.steps - 1} ({self.steps} sampling steps)")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({type(self.pipeline).__name__}, {self.layer.name}, steps={self.steps}, "
                f"guidance_scale={self.guidance_scale}, {self.height}x{self.width}, pooling={self.pooling!r})")


def own_size(pipeline: Any) -> int:
    """The side the pipeline renders at when none is given: its ``default_sample_size`` (SDXL,
    SD3, Flux) or its denoiser's ``sample_size``, times the VAE's scale factor."""
    sample = getattr(pipeline, "default_sample_size", None)
    if not sample:
        denoiser = getattr(pipeline, "unet", None) or getattr(pipeline, "transformer", None)
        sample = getattr(getattr(denoiser, "config", None), "sample_size", None) or 64
    return int(sample) * int(getattr(pipeline, "vae_scale_factor", 8))


@contextmanager
def _entered(value: Any) -> Iterator[Any]:
    """An already-entered context manager's value, as one (``_call``'s ``stop``)."""
    yield value


def _conditional_half(inputs: dict, images: int) -> dict:
    """Keep the second half of every batched input when the call was guided (2x ``images``)."""
    latent = inputs.get("sample", inputs.get("hidden_states"))
    if latent is None or latent.shape[0] != 2 * images:
        return inputs

    def half(name: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: half(k, v) for k, v in value.items()}
        if name in UNBATCHED_INPUTS or not hasattr(value, "shape") or value.dim() == 0:
            return value
        return value[images:] if value.shape[0] == 2 * images else value

    return {name: half(name, value) for name, value in inputs.items()}


def _merged(neutral: dict, prompt_inputs: dict, k: int, *, latent_rows: list[int],
            prompt_rows: list[int]) -> dict:
    """One forward's inputs: the neutral latents' (rows ``latent_rows``) with the prompt's
    inputs (rows ``prompt_rows``) in place of the neutral prompt's."""

    def pick(name: str, value: Any, candidates: Any) -> Any:
        if isinstance(value, dict):
            return {key: pick(key, item, (candidates or {}).get(key)) for key, item in value.items()}
        if name in PROMPT_INPUTS and candidates is not None:
            return candidates[prompt_rows]
        if name in UNBATCHED_INPUTS or not hasattr(value, "shape") or value.dim() == 0:
            return value
        return value[latent_rows] if value.shape[0] == k else value

    merged = {name: pick(name, value, prompt_inputs.get(name)) for name, value in neutral.items()}
    merged["return_dict"] = False
    return merged


def _number(value: Any) -> float | int:
    number = float(value)
    return int(number) if number.is_integer() else round(number, 4)


@contextmanager
def _quiet_truncation() -> Iterator[None]:
    import logging

    loggers = [logging.getLogger(name) for name in (
        "diffusers", "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion",
        "transformers", "transformers.tokenization_utils_base",
    )]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
