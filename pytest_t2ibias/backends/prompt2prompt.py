"""Counterfactual image sets by Prompt-to-Prompt (Hertz et al. 2022), SocialCounterfactuals' way
(Howard et al. 2024, seeds/002): one template, every combination of the attributes' values,
one image each, sharing the seed, the initial latents and, early on, the attention maps.

All prompts of a set run as one batch of a diffusers UNet2DCondition pipeline (SD 1.x, SDXL)
whose attention processors are ours for the call (``unet.set_attn_processor``, restored
after); sets of several seeds may share a batch, each edited against its own source, as
many as the generator's batch holds (``CounterfactualSetGenerator``). Prompt 0 is the source. For the first ``cross_replace`` fraction of the steps each
other prompt's cross-attention probabilities are the source's, mapped token to token (an
edit's word swap: equal tokens one to one, a swapped word's tokens onto the source word's,
its mass shared where the two differ in length; a token with no source keeps its own map:
P2P's "refinement"). For the first ``self_replace`` fraction, self-attention maps of layers
of at most 16x16 positions are the source's (P2P's ``self_replace_steps``, which keeps the
layout). With classifier-free guidance only the conditional half is edited, as in P2P.

The processor materialises the attention probabilities (it must edit them), as diffusers'
``AttnProcessor`` does and ``AttnProcessor2_0`` avoids: SD 1.5 at 512 px holds about 0.5 GB
a prompt (fp16, guidance on) in its 64x64 self-attention, one layer at a time.

Not built: P2P's local blending and attention re-weighting, and pipelines without a
``UNet2DConditionModel`` (SD3, Flux and PixArt are transformers with joint attention).
"""

from __future__ import annotations

import difflib
import itertools
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

SELF_REPLACE_MAX_POSITIONS = 16 ** 2
"""P2P replaces self-attention only in layers this small: the coarse layout, not the detail."""


def counterfactual_prompts(template: str, attributes: Mapping[str, Sequence[str]]) -> list[tuple[dict[str, str], str]]:
    """Every combination of the attributes' values (intersectional groups, in the attributes'
    order) and its prompt. A template with one empty slot ("a photo of a {} doctor") receives
    the values joined by spaces; one with named slots ("a {gender} doctor {skin}") each its own."""
    if not attributes or any(not values for values in attributes.values()):
        raise ValueError("each attribute needs at least one value")
    slots = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    named = [s for s in slots if s]
    if named and set(named) != set(attributes):
        raise ValueError(f"the template's slots {sorted(set(named))} are not the attributes {sorted(attributes)}")
    if not named and len(slots) != 1:
        raise ValueError(f"the template needs one slot '{{}}' or named slots, got {template!r}")
    combos = []
    for picked in itertools.product(*attributes.values()):
        values = dict(zip(attributes, picked))
        prompt = template.format(**values) if named else template.format(" ".join(picked))
        combos.append((values, " ".join(prompt.split())))
    return combos


def token_mapper(source: Sequence[int], target: Sequence[int]) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """(mapper[i_source, j_target], alpha[j_target], the source's and the target's edited positions).

    Equal runs map one to one; a replaced run maps each target token to the source token at
    its relative place, each source token's mass shared among the target tokens it feeds."""
    size = len(target)
    mapper = np.zeros((len(source), size))
    alpha = np.zeros(size)
    edited_source: list[int] = []
    edited_target: list[int] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=list(source), b=list(target), autojunk=False).get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapper[i1 + k, j1 + k] = 1.0
                alpha[j1 + k] = 1.0
            continue
        edited_source.extend(range(i1, i2))
        edited_target.extend(range(j1, j2))
        if tag == "replace":
            for j in range(j1, j2):
                mapper[i1 + (j - j1) * (i2 - i1) // (j2 - j1), j] = 1.0
                alpha[j] = 1.0
    fed = mapper.sum(axis=1, keepdims=True)
    return mapper / np.maximum(fed, 1.0), alpha, edited_source, edited_target


@dataclass
class AttentionControl:
    """What the processors share during one call: the step, the maps' edits, the record."""

    prompts: int
    mappers: torch.Tensor  # (P, K_source, K_target)
    alphas: torch.Tensor  # (P, K_target)
    cross_steps: int
    self_steps: int
    edited_tokens: list[list[int]]
    latent_size: tuple[int, int]
    step: int = 0
    sets: int = 1
    """Sets in the batch, one after the other (set-major), each its ``prompts`` in order."""
    region_sum: torch.Tensor | None = None
    region_calls: int = 0

    def edit(self, probs: torch.Tensor, heads: int, cross: bool) -> torch.Tensor:
        rows, queries, keys = probs.shape
        batch = rows // heads
        group = self.sets * self.prompts
        if batch not in (group, 2 * group):  # not our batch: leave it alone
            return probs
        view = probs.view(batch, heads, queries, keys)
        start = batch - group  # the conditional half under guidance, else everything
        if cross:
            self._record(view[start:], queries)
        if self.prompts < 2:
            return probs
        sets = view[start:].view(self.sets, self.prompts, heads, queries, keys)
        if cross and self.step < self.cross_steps and keys == self.mappers.shape[-1]:
            source = sets[:, 0]
            mapped = torch.einsum("shqi,pij->sphqj", source, self.mappers[1:].to(probs.device, probs.dtype))
            alpha = self.alphas[1:, None, None, :].to(probs.device, probs.dtype)
            view = view.clone()
            edited = view[start:].view(self.sets, self.prompts, heads, queries, keys)
            edited[:, 1:] = mapped * alpha + sets[:, 1:] * (1 - alpha)
        elif not cross and self.step < self.self_steps and queries <= SELF_REPLACE_MAX_POSITIONS:
            view = view.clone()
            edited = view[start:].view(self.sets, self.prompts, heads, queries, keys)
            edited[:, 1:] = edited[:, :1].expand_as(edited[:, 1:])
        else:
            return probs
        return view.reshape(rows, queries, keys)

    def _record(self, cond: torch.Tensor, queries: int) -> None:
        """Each prompt's attention to its own edited tokens, at latent size: where the attribute is drawn."""
        height, width = self.latent_size
        scale = int(round((height * width / queries) ** 0.5))
        if scale < 1 or (height // scale) * (width // scale) != queries:
            return
        maps = torch.stack([cond[s * self.prompts + p, :, :, tokens].sum(-1).mean(0) if tokens
                            else cond.new_zeros(queries)
                            for s in range(self.sets) for p, tokens in enumerate(self.edited_tokens)])
        maps = maps.view(self.sets * self.prompts, 1, height // scale, width // scale).float()
        maps = F.interpolate(maps, size=(height, width), mode="bilinear", align_corners=False)[:, 0]
        self.region_sum = maps if self.region_sum is None else self.region_sum + maps
        self.region_calls += 1


class Prompt2PromptProcessor:
    """diffusers' ``AttnProcessor`` computation (``attn(hidden_states, encoder_hidden_states,
    attention_mask, temb)``) with the probabilities passed through ``AttentionControl.edit``
    before they weight the values; without an edit it returns what ``AttnProcessor`` does."""

    def __init__(self, control: AttentionControl) -> None:
        self.control = control

    def __call__(self, attn: Any, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None = None,
                 attention_mask: torch.Tensor | None = None, temb: torch.Tensor | None = None,
                 *args: Any, **kwargs: Any) -> torch.Tensor:
        residual = hidden_states
        if attn.spatial_norm is not None:
            hidden_states = attn.spatial_norm(hidden_states, temb)
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch, channel, height * width).transpose(1, 2)
        cross = encoder_hidden_states is not None
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        batch_size, sequence_length, _ = context.shape
        attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        if cross and attn.norm_cross:
            context = attn.norm_encoder_hidden_states(context)
        key = attn.head_to_batch_dim(attn.to_k(context))
        value = attn.head_to_batch_dim(attn.to_v(context))
        probs = attn.get_attention_scores(attn.head_to_batch_dim(query), key, attention_mask)
        probs = self.control.edit(probs, attn.heads, cross)
        hidden_states = attn.batch_to_head_dim(torch.bmm(probs, value))
        hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        scaled: torch.Tensor = hidden_states / attn.rescale_output_factor
        return scaled


@dataclass(frozen=True)
class CounterfactualImage:
    values: dict[str, str]
    prompt: str
    image: Image.Image


@dataclass(frozen=True)
class CounterfactualSet:
    """One seed's images of every group; ``members[0]`` is the source prompt's."""

    template: str
    seed: int
    cross_replace: float
    self_replace: float
    members: tuple[CounterfactualImage, ...]
    attribute_region: np.ndarray | None = field(default=None, compare=False)
    """(H, W) at image size: the edited tokens' cross-attention, averaged over the set's prompts,
    steps and layers, scaled to [0, 1] between its minimum and maximum (where the attribute
    is drawn; at 8x8 latents the raw map is flat, 0.7 to 1.0 of its maximum)."""


def _initial_latents(pipeline: Any, seed: int, height: int, width: int, count: int) -> torch.Tensor:
    unet = pipeline.unet
    scale = pipeline.vae_scale_factor
    generator = torch.Generator("cpu").manual_seed(seed)
    noise = torch.randn((1, unet.config.in_channels, height // scale, width // scale), generator=generator)
    return noise.to(device=unet.device, dtype=unet.dtype).expand(count, -1, -1, -1).contiguous()


def generate_counterfactual_set(
    pipeline: Any, template: str, attributes: Mapping[str, Sequence[str]], *, seed: int,
    steps: int = 50, guidance: float = 7.5, cross_replace: float = 0.8, self_replace: float = 0.4,
    height: int | None = None, width: int | None = None,
) -> CounterfactualSet:
    """The set of ``counterfactual_prompts(template, attributes)`` at ``seed`` (defaults: P2P's
    word-swap example, 0.8 and 0.4 of 50 steps; SocialCounterfactuals varies the fraction)."""
    combos = counterfactual_prompts(template, attributes)
    images, region = generate_prompt_set(
        pipeline, [prompt for _, prompt in combos], seed=seed, steps=steps, guidance=guidance,
        cross_replace=cross_replace, self_replace=self_replace, height=height, width=width)
    members = tuple(CounterfactualImage(values, prompt, image) for (values, prompt), image in zip(combos, images))
    return CounterfactualSet(template, seed, cross_replace, self_replace, members, region)


def generate_prompt_set(
    pipeline: Any, prompts: Sequence[str], *, seed: int, steps: int = 50, guidance: float = 7.5,
    cross_replace: float = 0.8, self_replace: float = 0.4, height: int | None = None,
    width: int | None = None,
) -> tuple[list[Image.Image], np.ndarray | None]:
    """One image of each of ``prompts`` (``prompts[0]`` the source) under attention control,
    and the edited tokens' region (``CounterfactualSet.attribute_region``)."""
    return generate_prompt_sets(pipeline, prompts, seeds=[seed], steps=steps, guidance=guidance,
                                cross_replace=cross_replace, self_replace=self_replace,
                                height=height, width=width)[0]


def generate_prompt_sets(
    pipeline: Any, prompts: Sequence[str], *, seeds: Sequence[int], steps: int = 50,
    guidance: float = 7.5, cross_replace: float = 0.8, self_replace: float = 0.4,
    height: int | None = None, width: int | None = None,
) -> list[tuple[list[Image.Image], np.ndarray | None]]:
    """``generate_prompt_set`` at each of ``seeds``, in one batch of ``len(seeds) x
    len(prompts)`` images: each set edited against its own source, as if made alone (to
    rounding: batched kernels round in another order)."""
    if not hasattr(pipeline, "unet"):
        raise TypeError(f"{type(pipeline).__name__} has no UNet: Prompt-to-Prompt needs a UNet2DCondition pipeline")
    if not (0.0 <= self_replace <= 1.0 and 0.0 <= cross_replace <= 1.0):
        raise ValueError("cross_replace and self_replace are fractions of the steps, in [0, 1]")
    prompts = list(prompts)
    tokenizer = pipeline.tokenizer
    ids = tokenizer(prompts, padding="max_length", max_length=tokenizer.model_max_length, truncation=True).input_ids
    mappers: list[np.ndarray] = []
    alphas: list[np.ndarray] = []
    edited: list[set[int]] = [set() for _ in prompts]
    for p, target in enumerate(ids):
        mapper, alpha, source_edits, target_edits = token_mapper(ids[0], target)
        mappers.append(mapper)
        alphas.append(alpha)
        edited[0].update(source_edits)
        edited[p].update(target_edits)
    height = height or pipeline.unet.config.sample_size * pipeline.vae_scale_factor
    width = width or pipeline.unet.config.sample_size * pipeline.vae_scale_factor
    scale = pipeline.vae_scale_factor
    control = AttentionControl(
        prompts=len(prompts), mappers=torch.tensor(np.stack(mappers)), alphas=torch.tensor(np.stack(alphas)),
        cross_steps=int(round(cross_replace * steps)), self_steps=int(round(self_replace * steps)),
        edited_tokens=[sorted(e) for e in edited], latent_size=(height // scale, width // scale),
        sets=len(seeds))

    def advance(_pipeline: Any, index: int, _timestep: Any, outputs: dict[str, Any]) -> dict[str, Any]:
        control.step = index + 1
        return outputs

    unet = pipeline.unet
    original = dict(unet.attn_processors)
    unet.set_attn_processor(Prompt2PromptProcessor(control))
    try:
        with torch.no_grad():
            latents = torch.cat([_initial_latents(pipeline, seed, height, width, len(prompts))
                                 for seed in seeds])
            images = pipeline(prompt=prompts * len(seeds), latents=latents,
                              num_inference_steps=steps, guidance_scale=guidance, height=height, width=width,
                              output_type="pil", callback_on_step_end=advance).images
    finally:
        unet.set_attn_processor(original)
    made = []
    for s in range(len(seeds)):
        region = None
        if control.region_sum is not None:
            own = control.region_sum[s * len(prompts):(s + 1) * len(prompts)]
            mean = (own / control.region_calls).mean(0, keepdim=True)[None]
            mean = F.interpolate(mean, size=(height, width), mode="bilinear", align_corners=False)[0, 0]
            low, high = mean.min(), mean.max()
            region = ((mean - low) / (high - low).clamp_min(1e-12)).cpu().numpy()
        made.append(([image.convert("RGB") for image in images[s * len(prompts):(s + 1) * len(prompts)]],
                     region))
    return made


class CounterfactualSetGenerator:
    """A ``Generator`` (cached like any) whose image i of each of ``prompts`` is that prompt's
    member of Prompt-to-Prompt set i: every request with noise seed s is answered from the one
    set made at s, so the images of a set share the seed, the scene and early attention, and
    differ in the words that differ. ``inner``: a diffusers generator (lazy or loaded)."""

    def __init__(self, inner: Any, prompts: Sequence[str], *, cross_replace: float = 0.8,
                 self_replace: float = 0.4) -> None:
        import hashlib

        self.inner = inner
        self.prompts = list(dict.fromkeys(prompts))
        self.cross_replace = cross_replace
        self.self_replace = self_replace
        digest = hashlib.sha256("\0".join(self.prompts).encode()).hexdigest()[:16]
        self.fingerprint = (f"prompt2prompt(cross {cross_replace:g}, self {self_replace:g}, "
                            f"set {digest}):{inner.fingerprint}")
        self._made: dict[tuple[int, str, tuple[Any, ...]], Image.Image] = {}

    def generate(self, requests: list[Any]) -> list[Image.Image]:
        missing: dict[tuple[Any, ...], list[Any]] = {}  # sampling -> a request a missing seed
        for request in requests:
            if request.prompt not in self.prompts:
                raise ValueError(f"{request.prompt!r} is not a prompt of this counterfactual set")
            sampling = tuple(request.sampling.items())
            if (request.noise_seed, request.prompt, sampling) not in self._made:
                seeds = missing.setdefault(sampling, [])
                if all(r.noise_seed != request.noise_seed for r in seeds):
                    seeds.append(request)
        for sampling, seeds in missing.items():
            per_call = self._sets_a_call()
            for begin in range(0, len(seeds), per_call):
                self._make(seeds[begin:begin + per_call], sampling)
        keys = [(r.noise_seed, r.prompt, tuple(r.sampling.items())) for r in requests]
        out = [self._made[key] for key in keys]
        for key in keys:  # handed out: the cache keeps them from here
            self._made.pop(key, None)
        return out

    def _sets_a_call(self) -> int:
        """Sets one pipeline call makes: as many as the generator's batch holds images (at
        least one; its default, 8, when its ``auto`` size is not known yet)."""
        loaded = self.inner.loaded() if hasattr(self.inner, "loaded") else self.inner
        size = getattr(loaded, "batch_size", None) or 8
        return max(1, size // len(self.prompts))

    def _make(self, requests: list[Any], sampling: tuple[Any, ...]) -> None:
        """The sets at ``requests``' seeds (one request a seed, sharing ``sampling``)."""
        loaded = self.inner.loaded() if hasattr(self.inner, "loaded") else self.inner
        first = requests[0]
        steps = first.steps or loaded.steps or 50
        guidance = loaded.guidance_scale if first.guidance is None else first.guidance
        made = generate_prompt_sets(
            loaded.pipeline, self.prompts, seeds=[r.noise_seed % 2**63 for r in requests],
            steps=steps, guidance=7.5 if guidance is None else guidance,
            cross_replace=self.cross_replace, self_replace=self.self_replace,
            height=first.height or loaded.height, width=first.width or loaded.width)
        for request, (images, _) in zip(requests, made):
            for prompt, image in zip(self.prompts, images):
                self._made[(request.noise_seed, prompt, sampling)] = image

    def prompt_problems(self, prompts: Sequence[str]) -> dict[str, str]:
        problems: dict[str, str] = getattr(self.inner, "prompt_problems", lambda _: {})(prompts)
        return problems
