"""The UNet's h-space (mid-block output) while sampling, and BGPS' one-forward candidate read-out.

DiffLens (shi2025dissecting) and BGPS (seeds/001, §3.2 "Attribute classifiers", A.5) read a
generated image's attributes off the activation of ``unet.mid_block`` at a given denoising
step, long before the image exists. Under classifier-free guidance the UNet sees the batch
``[uncond, cond]`` (diffusers concatenates the negative prompt first); the conditional half is
the one that depends on the prompt, so it is the only one kept.

Two read-outs:

* :meth:`HSpaceReader.trajectory_features` — sample each prompt with its own seeded noise,
  exactly as the pipeline does, and keep h at chosen step indices (probe training data).
* :meth:`HSpaceReader.candidate_features` — BGPS' scoring path (Eq. 4): K latents are first
  denoised under a neutral prompt up to step index t (:meth:`HSpaceReader.neutral_latents`),
  then every candidate prompt costs ONE conditional UNet forward per latent at that step,
  batched across candidates x latents and stopped right after the mid-block.

Features are the mid-block output flattened (channels x height x width), as DiffLens' heads
read it (1280*8*8 for SD 1.5): the probe may use *where* in the picture the evidence sits.
``pooling="mean"`` averages the spatial dims instead (channels only): smaller, translation
invariant, for large models whose flattened h is too wide for a small training set.

A step index i is the i-th UNet call of the sampling loop, at timestep ``scheduler.timesteps[i]``;
index 0 is the pure-noise input. Noise comes from one CPU ``torch.Generator`` per image seeded
with its noise seed, like ``DiffusersGenerator``, so features are the same on every device and
whatever the batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendError

LAYER = "unet.mid_block"
POOLINGS = ("flatten", "mean")


class _StopAfterMidBlock(Exception):
    """Raised by the hook to skip the UNet's up blocks when only h is wanted."""


@contextmanager
def capture_mid_block(unet: Any, *, conditional_half: bool, stop: bool = False) -> Iterator[list]:
    """Record every ``unet.mid_block`` output (a list of tensors, one per UNet call).

    ``conditional_half``: the batch is ``[uncond, cond]`` (classifier-free guidance); keep the
    second half. ``stop``: end the forward right after the mid-block (the caller catches
    ``_StopAfterMidBlock``), since nothing after it is needed.
    """
    outputs: list = []

    def hook(module, inputs, output):
        hidden = output[0] if isinstance(output, tuple) else output
        if conditional_half:
            hidden = hidden[hidden.shape[0] // 2:]
        outputs.append(hidden.detach().float().cpu())
        if stop:
            raise _StopAfterMidBlock

    mid_block = getattr(unet, "mid_block", None)
    if mid_block is None:
        raise BackendError(
            f"{type(unet).__name__} has no mid_block: h-space probes (DiffLens/BGPS) need a "
            "UNet2DConditionModel-style UNet; use a Stable Diffusion-like pipeline."
        )
    handle = mid_block.register_forward_hook(hook)
    try:
        yield outputs
    finally:
        handle.remove()


def pool(hidden: Any, pooling: str) -> np.ndarray:
    """(batch, channels, h, w) -> (batch, features): flattened, or averaged over h and w."""
    if pooling == "flatten":
        return hidden.reshape(hidden.shape[0], -1).numpy()
    if pooling == "mean":
        return hidden.mean(dim=(2, 3)).numpy()
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


@dataclass(frozen=True)
class NeutralLatents:
    """K latents denoised under a neutral prompt up to step ``step_index`` (BGPS' z_k at t).

    ``model_input`` is what the UNet takes at that step (the scheduler's scaled latents).
    """

    prompt: str
    noise_seeds: tuple[int, ...]
    step_index: int
    timestep: int
    model_input: Any  # torch.Tensor (K, C, h, w) on the reader's device


class HSpaceReader:
    """Reads h-space off a Stable Diffusion-like pipeline (``unet``, ``scheduler``, ``encode_prompt``).

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
        for needed in ("unet", "scheduler", "encode_prompt", "prepare_extra_step_kwargs"):
            if not hasattr(pipeline, needed):
                raise BackendError(
                    f"{type(pipeline).__name__} has no {needed!r}: h-space read-out supports "
                    "Stable Diffusion-like pipelines (a UNet with a mid-block, prompt embeddings)."
                )
        self.pipeline = pipeline
        self.fingerprint = fingerprint
        self.steps = steps
        self.guidance_scale = guidance_scale
        sample = pipeline.unet.config.sample_size * pipeline.vae_scale_factor
        self.height = height or sample
        self.width = width or sample
        self.pooling = pooling
        self.batch_size = max(1, batch_size)
        self.unet_forwards = 0
        """UNet calls made so far (each over a batch; CFG pairs count once)."""
        self.unet_evaluations = 0
        """Image-latents pushed through the UNet so far (a CFG pair counts once)."""

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
        return self.pipeline.unet.device

    @property
    def scheduler_name(self) -> str:
        return type(self.pipeline.scheduler).__name__

    @property
    def scheduler_config(self) -> dict:
        """The scheduler's config as plain JSON values (infinities as strings)."""
        return {k: _jsonable(v) for k, v in dict(self.pipeline.scheduler.config).items()}

    def timesteps(self) -> list[int]:
        """The scheduler's timestep for every step index at ``self.steps`` steps."""
        scheduler = self._fresh_scheduler()
        return [int(t) for t in scheduler.timesteps]

    def describe(self) -> dict:
        """Everything a probe trained on this reader depends on (saved in its metadata)."""
        return {
            "generator_fingerprint": self.fingerprint,
            "layer": LAYER,
            "pooling": self.pooling,
            "steps": self.steps,
            "guidance_scale": self.guidance_scale,
            "height": self.height,
            "width": self.width,
            "scheduler": self.scheduler_name,
            "scheduler_config": self.scheduler_config,
        }

    # -- sampling pieces --------------------------------------------------------------------

    def _fresh_scheduler(self) -> Any:
        """Schedulers are stateful (multistep solvers keep past outputs): one per run."""
        scheduler = type(self.pipeline.scheduler).from_config(self.pipeline.scheduler.config)
        scheduler.set_timesteps(self.steps, device=self.device)
        return scheduler

    def _embeddings(self, prompts: Sequence[str], guided: bool) -> Any:
        """Prompt embeddings as the pipeline makes them. A prompt longer than the text encoder's
        window is truncated exactly as when generating (so its images are too); the warning the
        pipeline logs for each is silenced, since a prompt search proposes many such texts."""
        import torch

        with _quiet_truncation():
            cond, uncond = self.pipeline.encode_prompt(
                list(prompts), self.device, num_images_per_prompt=1, do_classifier_free_guidance=guided,
            )
        return torch.cat([uncond, cond]) if guided else cond

    def _initial_latents(self, noise_seeds: Sequence[int]) -> tuple[Any, list]:
        """Unit-variance noise drawn as the pipeline draws it (``randn_tensor``, one CPU
        generator per image, as ``DiffusersGenerator`` passes them)."""
        import torch
        from diffusers.utils.torch_utils import randn_tensor

        generators = [torch.Generator("cpu").manual_seed(int(seed)) for seed in noise_seeds]
        unet, scale = self.pipeline.unet, self.pipeline.vae_scale_factor
        shape = (len(noise_seeds), unet.config.in_channels, self.height // scale, self.width // scale)
        return randn_tensor(shape, generator=generators, device=self.device, dtype=unet.dtype), generators

    @property
    def _guided(self) -> bool:
        return self.guidance_scale > 1.0

    def _denoise(self, prompts: Sequence[str], noise_seeds: Sequence[int], n_steps: int, on_step=None):
        """Run the pipeline's sampling loop for ``n_steps`` UNet calls; returns (latents, scheduler).

        ``on_step(i)`` is called before the i-th UNet call (to mark captured outputs).
        """
        import torch

        scheduler = self._fresh_scheduler()
        guided = self._guided
        embeddings = self._embeddings(prompts, guided)
        latents, generators = self._initial_latents(noise_seeds)
        latents = latents * scheduler.init_noise_sigma
        extra = self.pipeline.prepare_extra_step_kwargs(generators, 0.0)
        with torch.no_grad():
            for i, t in enumerate(scheduler.timesteps[:n_steps]):
                if on_step is not None:
                    on_step(i)
                model_input = torch.cat([latents] * 2) if guided else latents
                model_input = scheduler.scale_model_input(model_input, t)
                noise = self.pipeline.unet(model_input, t, encoder_hidden_states=embeddings, return_dict=False)[0]
                self.unet_forwards += 1
                self.unet_evaluations += len(prompts)
                if guided:
                    uncond, cond = noise.chunk(2)
                    noise = uncond + self.guidance_scale * (cond - uncond)
                latents = scheduler.step(noise, t, latents, **extra, return_dict=False)[0]
        return latents, scheduler

    # -- read-outs --------------------------------------------------------------------------

    def trajectory_features(
        self, prompts: Sequence[str], noise_seeds: Sequence[int], step_indices: Sequence[int]
    ) -> np.ndarray:
        """h at each step index while sampling ``prompts[i]`` from ``noise_seeds[i]``.

        Returns (prompts, len(step_indices), features): the conditional half under guidance.
        Sampling stops after the last index needed (no decoding), so this costs
        ``max(step_indices) + 1`` UNet calls per batch.
        """
        if len(prompts) != len(noise_seeds):
            raise ValueError(f"{len(prompts)} prompts but {len(noise_seeds)} noise seeds")
        self._check_indices(step_indices)
        wanted = sorted({int(i) for i in step_indices})
        rows = []
        for start in range(0, len(prompts), self.batch_size):
            batch = slice(start, start + self.batch_size)
            marks: dict[int, int] = {}  # step index -> position of its output in `outputs`
            with capture_mid_block(self.pipeline.unet, conditional_half=self._guided) as outputs:
                def mark(i: int, marks=marks, outputs=outputs) -> None:
                    marks[i] = len(outputs)

                self._denoise(prompts[batch], noise_seeds[batch], wanted[-1] + 1, on_step=mark)
            rows.append(np.stack([pool(outputs[marks[int(i)]], self.pooling) for i in step_indices], axis=1))
        return np.concatenate(rows) if rows else np.empty((0, len(step_indices), 0), dtype=np.float32)

    def neutral_latents(self, prompt: str, noise_seeds: Sequence[int], step_index: int) -> NeutralLatents:
        """Denoise K latents under ``prompt`` for ``step_index`` steps (BGPS: "a photo of a person")."""
        self._check_indices([step_index])
        latents, scheduler = self._denoise([prompt] * len(noise_seeds), noise_seeds, step_index)
        t = scheduler.timesteps[step_index]
        model_input = scheduler.scale_model_input(latents, t)
        return NeutralLatents(prompt, tuple(int(s) for s in noise_seeds), step_index, int(t), model_input)

    def candidate_features(self, prompts: Sequence[str], neutral: NeutralLatents) -> np.ndarray:
        """h_t(x, z_k) for every candidate x and latent z_k: (prompts, K, features).

        One conditional UNet forward per (candidate, latent), stopped after the mid-block.
        Only the conditional branch is run: the UNet treats batch rows independently, so its
        mid-block output equals the cond half of a guided [uncond, cond] call.
        """
        import torch

        k = neutral.model_input.shape[0]
        pairs = [(c, j) for c in range(len(prompts)) for j in range(k)]
        features = []
        with torch.no_grad():
            for start in range(0, len(pairs), self.batch_size):
                chunk = pairs[start:start + self.batch_size]
                used = sorted({c for c, _ in chunk})
                embeddings = self._embeddings([prompts[c] for c in used], guided=False)
                row_of = {c: r for r, c in enumerate(used)}
                hidden_states = embeddings[[row_of[c] for c, _ in chunk]]
                model_input = neutral.model_input[[j for _, j in chunk]]
                t = torch.tensor(neutral.timestep, device=self.device)
                with capture_mid_block(self.pipeline.unet, conditional_half=False, stop=True) as outputs:
                    try:
                        self.pipeline.unet(model_input, t, encoder_hidden_states=hidden_states, return_dict=False)
                    except _StopAfterMidBlock:
                        pass
                self.unet_forwards += 1
                self.unet_evaluations += len(chunk)
                features.append(pool(outputs[0], self.pooling))
        flat = np.concatenate(features) if features else np.empty((0, 0), dtype=np.float32)
        return flat.reshape(len(prompts), k, -1)

    def _check_indices(self, step_indices: Sequence[int]) -> None:
        bad = [i for i in step_indices if not 0 <= int(i) < self.steps]
        if bad:
            raise ValueError(f"step indices {bad} outside 0..{self.steps - 1} ({self.steps} sampling steps)")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({type(self.pipeline).__name__}, steps={self.steps}, "
                f"guidance_scale={self.guidance_scale}, {self.height}x{self.width}, pooling={self.pooling!r})")


@contextmanager
def _quiet_truncation() -> Iterator[None]:
    import logging

    loggers = [logging.getLogger(name) for name in (
        "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion",
        "transformers.tokenization_utils_base",
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
