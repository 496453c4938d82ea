"""Train a tiny Stable Diffusion pipeline from scratch on toy-world images, and fine-tune it.

The recipe is diffusers' ``train_text_to_image.py`` shrunk to fit two CPU cores:

1. sample captioned records from the world and render them (32x32);
2. train an ``AutoencoderKL`` (32x32x3 <-> 8x8x4) on the images, then encode the whole set
   once, so the denoiser never runs the encoder again;
3. train a ``UNet2DConditionModel`` and a 2-layer ``CLIPTextModel`` jointly (epsilon
   prediction, min-SNR weighting, ~10% empty captions for classifier-free guidance, EMA);
4. save a ``StableDiffusionPipeline`` with a local word-level tokenizer that
   ``DiffusionPipeline.from_pretrained(dir, local_files_only=True)`` loads.

``finetune_diffusion`` continues step 3 from a saved pipeline on another world's data (same
VAE, same tokenizer): that is how the "debiased" fixture is made.

``AttributeProbe`` is the ruler: a small CNN trained on VAE reconstructions of rendered images
that reads every person attribute back from a generated image, so the shares a pipeline
produces can be compared with the world's ``expected_shares``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pytest_t2ibias.testing.tokenizer import build_word_tokenizer, extend_word_tokenizer
from toyworld.render import render_dataset, render_image
from toyworld.sample import (
    caption_words,
    expected_shares,
    sample_people,
    world_vocabulary,
)
from toyworld.spec import World

log = logging.getLogger(__name__)

# The scheduler the pipeline is trained with and saved with (Stable Diffusion's betas).
NOISE_SCHEDULE = {"num_train_timesteps": 1000, "beta_schedule": "scaled_linear", "beta_start": 0.00085, "beta_end": 0.012}


@dataclass
class DiffusionConfig:
    """Every knob of the diffusion build; recorded as-is in the manifest."""

    n_images: int = 20_000
    resolution: int = 32
    # AutoencoderKL: three blocks = two downsamplings, 32x32x3 -> 8x8x4
    vae_blocks: tuple[int, ...] = (16, 32, 32)
    vae_steps: int = 1000
    vae_batch: int = 64
    vae_lr: float = 1e-3
    vae_kl_weight: float = 1e-6
    # UNet2DConditionModel on 8x8x4 latents, cross-attention in every block
    unet_blocks: tuple[int, ...] = (32, 64)
    unet_layers_per_block: int = 1
    attention_head_channels: int = 16
    # CLIPTextModel: 2 layers over a word-level vocabulary
    text_hidden: int = 64
    text_layers: int = 2
    text_heads: int = 4
    model_max_length: int = 20
    # Trained jointly: a frozen random encoder learned subject skews slower (quick-budget
    # ablation: baker 72% vs 83% female, spec 90%).
    train_text_encoder: bool = True
    # Rare phrasings are learned late: "a female musician" came out 59% female after 1500
    # steps and 99% after 6000.
    unet_steps: int = 6000
    unet_batch: int = 64
    unet_lr: float = 1e-3
    warmup_steps: int = 100
    caption_dropout: float = 0.1  # empty caption, so the model also learns p(x) for guidance
    snr_gamma: float = 5.0  # min-SNR loss weighting (Hang et al. 2023)
    ema_decay: float = 0.999
    # Default sampling settings, written into the manifest for every consumer. Guidance 2
    # measured closest to the spec (share MAE 0.056 vs 0.095 at 3, which over-amplifies skews).
    sample_steps: int = 20
    guidance_scale: float = 2.0
    # One thread: on a shared 2-core machine two threads contend and run slower, not faster.
    threads: int = 1

    @classmethod
    def quick(cls) -> DiffusionConfig:
        """A budget small enough for a test (~10 minutes on one core): learns subject-level skews,
        not yet rare phrasings ("a female pilot") -- those took thousands of steps."""
        return cls(n_images=3000, vae_steps=150, unet_steps=1000, warmup_steps=50, ema_decay=0.99)


# ----------------------------------------------------------------------------- data


@dataclass
class TrainingSet:
    """Rendered images in [-1, 1] (N, 3, H, W) with their captions."""

    images: torch.Tensor
    captions: list[str]
    records: list = field(repr=False)


def make_training_set(world: World, n_images: int, seed: int, resolution: int = 32, subjects: Sequence[str] | None = None) -> TrainingSet:
    records = sample_people(world, n_images, seed=seed, subjects=subjects)
    pixels = render_dataset(records, resolution=resolution)
    images = torch.from_numpy(pixels).permute(0, 3, 1, 2).float().div(127.5).sub(1.0)
    return TrainingSet(images=images, captions=[r.caption for r in records], records=records)


def make_tokenizer(world: World, model_max_length: int):
    return build_word_tokenizer(world_vocabulary(world), model_max_length=model_max_length)


def tokenize(tokenizer, captions: Sequence[str]) -> torch.Tensor:
    """Token ids exactly as ``StableDiffusionPipeline.encode_prompt`` makes them (padded to max length)."""
    longest = max(len(caption_words(c)) + 2 for c in captions)
    if longest > tokenizer.model_max_length:
        raise ValueError(f"a caption has {longest} tokens, more than model_max_length={tokenizer.model_max_length}")
    return tokenizer(list(captions), padding="max_length", max_length=tokenizer.model_max_length, truncation=True, return_tensors="pt").input_ids


# ----------------------------------------------------------------------------- models


def build_vae(config: DiffusionConfig):
    from diffusers import AutoencoderKL

    n = len(config.vae_blocks)
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * n,
        up_block_types=("UpDecoderBlock2D",) * n,
        block_out_channels=tuple(config.vae_blocks),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=8,
        sample_size=config.resolution,
    )


def build_text_encoder(config: DiffusionConfig, tokenizer):
    from transformers import CLIPTextConfig, CLIPTextModel

    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer),
            hidden_size=config.text_hidden,
            intermediate_size=config.text_hidden * 4,
            num_hidden_layers=config.text_layers,
            num_attention_heads=config.text_heads,
            max_position_embeddings=config.model_max_length,
            projection_dim=config.text_hidden,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    )
    return text_encoder


def build_unet(config: DiffusionConfig, latent_size: int):
    from diffusers import UNet2DConditionModel

    n = len(config.unet_blocks)
    return UNet2DConditionModel(
        sample_size=latent_size,
        in_channels=4,
        out_channels=4,
        layers_per_block=config.unet_layers_per_block,
        block_out_channels=tuple(config.unet_blocks),
        down_block_types=("CrossAttnDownBlock2D",) * n,
        up_block_types=("CrossAttnUpBlock2D",) * n,
        cross_attention_dim=config.text_hidden,
        # diffusers' legacy name: this is the number of heads per block. Heads of 16 dims
        # (not SD's 8 heads, which would be 4 dims here) learned "doctor" -> male far faster.
        attention_head_dim=tuple(channels // config.attention_head_channels for channels in config.unet_blocks),
        norm_num_groups=16,
    )


def sampling_scheduler():
    """DPM-Solver++ (2nd order): good samples in ~20 steps; config values that raise no warnings."""
    from diffusers import DPMSolverMultistepScheduler

    return DPMSolverMultistepScheduler(**NOISE_SCHEDULE, steps_offset=1, algorithm_type="dpmsolver++", solver_order=2)


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


# ----------------------------------------------------------------------------- training


def train_vae(vae, images: torch.Tensor, config: DiffusionConfig, generator: torch.Generator) -> list[float]:
    """Reconstruction (MSE) plus a tiny KL term that keeps the latents near N(0, I)."""
    optimizer = torch.optim.AdamW(vae.parameters(), lr=config.vae_lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=config.vae_lr, total_steps=config.vae_steps, pct_start=0.1)
    vae.train()
    losses = []
    for step in range(config.vae_steps):
        batch = images[torch.randint(len(images), (config.vae_batch,), generator=generator)]
        posterior = vae.encode(batch).latent_dist
        latents = posterior.mean + posterior.std * torch.randn(posterior.mean.shape, generator=generator)
        reconstruction = vae.decode(latents).sample
        loss = F.mse_loss(reconstruction, batch) + config.vae_kl_weight * posterior.kl().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 100 == 0 or step == config.vae_steps - 1:
            log.info("vae step %d/%d loss %.4f", step + 1, config.vae_steps, np.mean(losses[-100:]))
    vae.eval()
    return losses


def finetune_decoder(vae, latent_mean: torch.Tensor, latent_std: torch.Tensor, images: torch.Tensor,
                     generator: torch.Generator, *, steps: int, lr: float = 5e-4, batch: int = 64) -> list[float]:
    """Train the VAE's decoder (encoder frozen) to reconstruct ``images`` from their cached latents.

    A world's new look (a mug) is encoded somewhere by the frozen encoder, and the UNet learns
    to produce those latents, but a decoder that never saw one decodes them into the nearest
    thing it knows (a person by a window). The encoder, the latent space and the scaling factor
    stay, so a UNet trained on them stays valid.
    """
    parameters = [*vae.decoder.parameters(), *vae.post_quant_conv.parameters()]
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    vae.train()
    losses = []
    for step in range(steps):
        index = torch.randint(len(images), (batch,), generator=generator)
        latents = latent_mean[index] + latent_std[index] * torch.randn(latent_mean[index].shape, generator=generator)
        loss = F.mse_loss(vae.decode(latents).sample, images[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 100 == 0 or step == steps - 1:
            log.info("decoder step %d/%d loss %.4f", step + 1, steps, np.mean(losses[-100:]))
    vae.eval()
    return losses


def looks_as_before(records, new_axes: Sequence[str], resolution: int = 32) -> np.ndarray:
    """Per record: does it render the same without its ``new_axes`` values (a plain mug)?"""
    if not new_axes:
        return np.ones(len(records), dtype=bool)
    same = np.empty(len(records), dtype=bool)
    for i, record in enumerate(records):
        older = {k: v for k, v in record.attributes.items() if k not in new_axes}
        same[i] = older == record.attributes or np.array_equal(
            np.asarray(render_image(record.attributes, record.look, record.seed, resolution)),
            np.asarray(render_image(older, record.look, record.seed, resolution)))
    return same


def finetune_vae_anchored(vae, images: torch.Tensor, anchored: torch.Tensor, generator: torch.Generator, *,
                          steps: int, lr: float = 5e-4, batch: int = 64, kl_weight: float = 1e-6,
                          anchor_weight: float = 1.0) -> list[float]:
    """Train encoder and decoder on ``images``, holding the latents of ``anchored`` images where
    they were.

    A new look with fine detail (a mug's stripes, 2 px at 32 px) is lost by a frozen encoder:
    nothing it was trained on needed it, and no decoder can bring back what the latent lacks.
    Training the encoder too would move every latent the UNet has learnt, so the images of the
    world before the edit (``anchored``: a boolean mask) keep their old posterior means
    (squared distance, ``anchor_weight``) while the new ones find room of their own.
    """
    old_means, _ = encode_latents(vae, images)
    optimizer = torch.optim.AdamW(vae.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    vae.train()
    losses = []
    for step in range(steps):
        index = torch.randint(len(images), (batch,), generator=generator)
        posterior = vae.encode(images[index]).latent_dist
        latents = posterior.mean + posterior.std * torch.randn(posterior.mean.shape, generator=generator)
        loss = F.mse_loss(vae.decode(latents).sample, images[index]) + kl_weight * posterior.kl().mean()
        held = anchored[index]
        if held.any():
            loss = loss + anchor_weight * F.mse_loss(posterior.mean[held], old_means[index][held])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == steps - 1:
            log.info("vae step %d/%d loss %.4f", step + 1, steps, np.mean(losses[-50:]))
    vae.eval()
    return losses


@torch.no_grad()
def encode_latents(vae, images: torch.Tensor, batch: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Posterior mean and std of every image, computed once."""
    means, stds = [], []
    for i in range(0, len(images), batch):
        posterior = vae.encode(images[i : i + batch]).latent_dist
        means.append(posterior.mean)
        stds.append(posterior.std)
    return torch.cat(means), torch.cat(stds)


def _min_snr_weights(scheduler, timesteps: torch.Tensor, gamma: float) -> torch.Tensor:
    alphas_cumprod = scheduler.alphas_cumprod[timesteps]
    snr = alphas_cumprod / (1 - alphas_cumprod)
    return torch.clamp(snr, max=gamma) / snr  # epsilon prediction: min(SNR, gamma) / SNR


def train_denoiser(
    unet,
    text_encoder,
    tokenizer,
    latent_mean: torch.Tensor,
    latent_std: torch.Tensor,
    captions: Sequence[str],
    scaling_factor: float,
    config: DiffusionConfig,
    generator: torch.Generator,
    steps: int | None = None,
    lr: float | None = None,
) -> tuple[dict[str, torch.Tensor], list[float]]:
    """Train UNet (+ text encoder) on cached latents; returns the EMA weights and the losses."""
    from diffusers import DDPMScheduler

    steps = steps or config.unet_steps
    lr = lr or config.unet_lr
    noise_scheduler = DDPMScheduler(**NOISE_SCHEDULE)
    token_ids = tokenize(tokenizer, captions)
    empty_ids = tokenize(tokenizer, [""])[0]

    modules = nn.ModuleDict({"unet": unet, "text_encoder": text_encoder})
    text_encoder.requires_grad_(config.train_text_encoder)
    parameters = [p for p in modules.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=1e-2)
    warmup = min(config.warmup_steps, steps // 5)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / max(1, warmup)) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps))),
    )
    ema = {k: v.detach().clone() for k, v in modules.state_dict().items()}
    modules.train()
    losses = []
    for step in range(steps):
        index = torch.randint(len(latent_mean), (config.unet_batch,), generator=generator)
        latents = latent_mean[index] + latent_std[index] * torch.randn(latent_mean[index].shape, generator=generator)
        latents = latents * scaling_factor
        ids = token_ids[index].clone()
        dropped = torch.rand(len(index), generator=generator) < config.caption_dropout
        ids[dropped] = empty_ids

        noise = torch.randn(latents.shape, generator=generator)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (len(index),), generator=generator)
        noisy = noise_scheduler.add_noise(latents, noise, timesteps)
        hidden = text_encoder(ids)[0]
        predicted = unet(noisy, timesteps, hidden).sample
        per_example = F.mse_loss(predicted, noise, reduction="none").mean(dim=(1, 2, 3))
        loss = (per_example * _min_snr_weights(noise_scheduler, timesteps, config.snr_gamma)).mean()

        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        schedule.step()
        decay = min(config.ema_decay, (1 + step) / (10 + step))
        with torch.no_grad():
            for name, value in modules.state_dict().items():
                if value.dtype.is_floating_point:
                    ema[name].lerp_(value, 1 - decay)
                else:
                    ema[name].copy_(value)
        losses.append(loss.item())
        if step % 100 == 0 or step == steps - 1:
            log.info("unet step %d/%d loss %.4f lr %.2e", step + 1, steps, np.mean(losses[-100:]), schedule.get_last_lr()[0])
    modules.load_state_dict(ema)
    modules.eval()
    return ema, losses


def assemble_pipeline(vae, text_encoder, tokenizer, unet):
    from diffusers import StableDiffusionPipeline

    return StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=sampling_scheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def train_diffusion(world: World, out_dir: str | Path, *, seed: int = 0, config: DiffusionConfig | None = None) -> dict:
    """Train VAE, then UNet + text encoder, on ``world``; save the pipeline to ``out_dir``.

    Returns what the manifest records: config, seed, parameter counts, losses, wall times.
    """
    config = config or DiffusionConfig()
    torch.set_num_threads(config.threads)
    out_dir = Path(out_dir)
    timings = {}
    start = time.perf_counter()
    data = make_training_set(world, config.n_images, seed=seed, resolution=config.resolution)
    timings["render_s"] = time.perf_counter() - start
    log.info("rendered %d images in %.0fs", len(data.captions), timings["render_s"])

    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    vae = build_vae(config)
    start = time.perf_counter()
    vae_losses = train_vae(vae, data.images, config, generator)
    timings["vae_s"] = time.perf_counter() - start

    # Scale latents to unit variance, as SD's 0.18215 does for its VAE.
    latent_mean, latent_std = encode_latents(vae, data.images)
    scaling_factor = float(1.0 / (latent_mean.std() + 1e-8))
    vae.register_to_config(scaling_factor=scaling_factor)

    tokenizer = make_tokenizer(world, config.model_max_length)
    torch.manual_seed(seed + 1)
    text_encoder = build_text_encoder(config, tokenizer)
    torch.manual_seed(seed + 2)
    unet = build_unet(config, latent_size=config.resolution // 2 ** (len(config.vae_blocks) - 1))
    start = time.perf_counter()
    _, unet_losses = train_denoiser(unet, text_encoder, tokenizer, latent_mean, latent_std, data.captions, scaling_factor, config, generator)
    timings["unet_s"] = time.perf_counter() - start

    pipeline = assemble_pipeline(vae, text_encoder, tokenizer, unet)
    pipeline.save_pretrained(out_dir, safe_serialization=True)
    return {
        "config": _jsonable(asdict(config)),
        "seed": seed,
        "parameters": {"vae": count_parameters(vae), "unet": count_parameters(unet), "text_encoder": count_parameters(text_encoder)},
        "vae_scaling_factor": scaling_factor,
        "final_loss": {"vae": float(np.mean(vae_losses[-100:])), "unet": float(np.mean(unet_losses[-100:]))},
        "sampling": {"num_inference_steps": config.sample_steps, "guidance_scale": config.guidance_scale, "scheduler": "DPMSolverMultistepScheduler"},
        "wall_s": timings,
        "size_bytes": directory_size(out_dir),
    }


def finetune_diffusion(
    base_dir: str | Path,
    world: World,
    out_dir: str | Path,
    *,
    seed: int = 0,
    config: DiffusionConfig | None = None,
    steps: int = 800,
    lr: float = 3e-4,
    n_images: int | None = None,
    decoder_steps: int = 0,
    vae_steps: int = 0,
    new_axes: Sequence[str] = (),
) -> dict:
    """Continue training UNet + text encoder of the pipeline in ``base_dir`` on ``world``'s data.

    The VAE is kept; words of ``world`` the base tokenizer lacks are appended to it (old ids
    unchanged) and the text encoder's embeddings grow to match, so every caption the base
    understood means what it meant and the result is a drop-in replacement of the base.
    ``decoder_steps`` > 0 also trains the VAE's decoder on the world (``finetune_decoder``), for
    a world with a look the decoder never saw; ``steps`` 0 trains the decoder alone.
    ``vae_steps`` > 0 first trains encoder and decoder (``finetune_vae_anchored``) for a look
    too fine for the frozen encoder, holding the latents of every image that looks as it did
    before the world gained ``new_axes``.
    """
    from diffusers import StableDiffusionPipeline

    config = config or DiffusionConfig()
    torch.set_num_threads(config.threads)
    timings = {}
    base = StableDiffusionPipeline.from_pretrained(base_dir, local_files_only=True)
    added = sorted(set(world_vocabulary(world)) - set(base.tokenizer.get_vocab()))
    if added:
        log.info("world %r adds %d word(s) to the tokenizer: %s", world.name, len(added), added)
        base.tokenizer = extend_word_tokenizer(base.tokenizer, added)
        base.text_encoder.resize_token_embeddings(len(base.tokenizer))
    start = time.perf_counter()
    data = make_training_set(world, n_images or config.n_images // 2, seed=seed, resolution=config.resolution)
    timings["render_s"] = time.perf_counter() - start
    generator = torch.Generator().manual_seed(seed)
    vae_losses = []
    if vae_steps > 0:
        start = time.perf_counter()
        anchored = torch.from_numpy(looks_as_before(data.records, new_axes, config.resolution))
        log.info("vae: %d of %d images anchored (look as before the world gained %s)",
                 int(anchored.sum()), len(anchored), list(new_axes))
        vae_losses = finetune_vae_anchored(base.vae, data.images, anchored, generator, steps=vae_steps,
                                           lr=lr, batch=config.vae_batch, kl_weight=config.vae_kl_weight)
        timings["vae_s"] = time.perf_counter() - start
    latent_mean, latent_std = encode_latents(base.vae, data.images)
    losses = []
    if steps > 0:
        tuned = replace(config, warmup_steps=min(config.warmup_steps, steps // 10))
        start = time.perf_counter()
        _, losses = train_denoiser(
            base.unet, base.text_encoder, base.tokenizer, latent_mean, latent_std, data.captions,
            base.vae.config.scaling_factor, tuned, generator, steps=steps, lr=lr,
        )
        timings["unet_s"] = time.perf_counter() - start
    decoder_losses = []
    if decoder_steps > 0:
        start = time.perf_counter()
        decoder_losses = finetune_decoder(base.vae, latent_mean, latent_std, data.images, generator,
                                          steps=decoder_steps, lr=lr, batch=config.vae_batch)
        timings["decoder_s"] = time.perf_counter() - start
    pipeline = assemble_pipeline(base.vae, base.text_encoder, base.tokenizer, base.unet)
    pipeline.save_pretrained(out_dir, safe_serialization=True)
    return {
        "base": str(base_dir),
        "world": world.name,
        "seed": seed,
        "steps": steps,
        "lr": lr,
        "n_images": len(data.captions),
        "added_words": added,
        "final_loss": float(np.mean(losses[-100:])) if losses else None,
        **({"decoder_steps": decoder_steps, "decoder_final_loss": float(np.mean(decoder_losses[-100:]))}
           if decoder_losses else {}),
        **({"vae_steps": vae_steps, "vae_new_axes": list(new_axes),
            "vae_final_loss": float(np.mean(vae_losses[-50:]))} if vae_losses else {}),
        "wall_s": timings,
        "size_bytes": directory_size(out_dir),
    }


# ----------------------------------------------------------------------------- measuring


class AttributeProbe(nn.Module):
    """A small CNN with one head per person axis: reads attributes back from 32x32 images."""

    def __init__(self, axes: Mapping[str, Sequence[str]]):
        super().__init__()
        self.axes = {name: tuple(values) for name, values in axes.items()}
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
        )
        self.heads = nn.ModuleDict({name: nn.Linear(256, len(values)) for name, values in self.axes.items()})

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        features = self.features(images)
        return {name: head(features) for name, head in self.heads.items()}

    @torch.no_grad()
    def predict(self, images: torch.Tensor) -> dict[str, list[str]]:
        self.eval()
        logits = self(images)
        return {name: [self.axes[name][i] for i in out.argmax(1).tolist()] for name, out in logits.items()}


def train_probe(world: World, vae=None, *, seed: int = 0, n_images: int = 6000, steps: int = 600, held_out: int = 1000) -> tuple[AttributeProbe, dict[str, float]]:
    """Train an ``AttributeProbe`` on person images, passed through ``vae`` when given.

    Training on VAE reconstructions puts the probe in the distribution of generated images
    (same decoder, same blur). Returns the probe and its held-out accuracy per axis.
    """
    people = [name for name, s in world.subjects.items() if s.kind == "person"]
    axes = {a.name: a.values for a in world.axes.values() if a.applies_to == "person"}
    data = make_training_set(world, n_images + held_out, seed=seed + 7919, subjects=people)
    images = data.images
    if vae is not None:
        with torch.no_grad():
            images = torch.cat([vae.decode(vae.encode(images[i : i + 256]).latent_dist.mean).sample for i in range(0, len(images), 256)]).clamp(-1, 1)
    labels = {name: torch.tensor([values.index(r.attributes[name]) for r in data.records]) for name, values in axes.items()}
    torch.manual_seed(seed)
    probe = AttributeProbe(axes)
    optimizer = torch.optim.Adam(probe.parameters(), lr=2e-3)
    generator = torch.Generator().manual_seed(seed)
    probe.train()
    for _ in range(steps):
        index = torch.randint(n_images, (64,), generator=generator)
        logits = probe(images[index])
        loss = sum(F.cross_entropy(logits[name], labels[name][index]) for name in axes)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    predicted = probe.predict(images[n_images:])
    accuracy = {name: float(np.mean([p == values[i] for p, i in zip(predicted[name], labels[name][n_images:].tolist())])) for name, values in axes.items()}
    return probe, accuracy


def generate(pipeline, prompt: str, n: int, *, seed: int = 0, steps: int = 20, guidance_scale: float = 3.0, batch: int = 100) -> torch.Tensor:
    """``n`` images for ``prompt`` in [-1, 1], one CPU generator per image (reproducible)."""
    pipeline.set_progress_bar_config(disable=True)
    out = []
    for start in range(0, n, batch):
        count = min(batch, n - start)
        generators = [torch.Generator().manual_seed(seed + start + i) for i in range(count)]
        result = pipeline([prompt] * count, num_inference_steps=steps, guidance_scale=guidance_scale, generator=generators, output_type="pt")
        out.append(result.images * 2 - 1)
    return torch.cat(out)


def measure_shares(
    pipeline,
    probe: AttributeProbe,
    world: World,
    prompts: Sequence[tuple[str, str, Mapping[str, str] | None]],
    axes: Sequence[str],
    *,
    n: int = 200,
    seed: int = 0,
    steps: int = 20,
    guidance_scale: float = 3.0,
) -> list[dict]:
    """For each (prompt, subject, named values): measured vs expected share of every value of ``axes``."""
    rows = []
    for prompt, subject, given in prompts:
        images = generate(pipeline, prompt, n, seed=seed, steps=steps, guidance_scale=guidance_scale)
        predicted = probe.predict(images)
        for axis in axes:
            expected = expected_shares(world, subject, axis, given=given)
            measured = {v: predicted[axis].count(v) / n for v in expected}
            rows.append({
                "prompt": prompt,
                "axis": axis,
                "measured": measured,
                "expected": expected,
                "abs_error": max(abs(measured[v] - expected[v]) for v in expected),
            })
    return rows


def directory_size(path: str | Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value
