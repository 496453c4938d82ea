"""Issue #46: the plugin's GPU path at full size, plugin against raw diffusers/transformers.

Builds the released architectures at full size from their configs (``benchmarks/configs/``,
copied from the hub's config files) with random weights, nothing downloaded: SD 1.5 (UNet,
VAE, CLIP ViT-L text encoder), SDXL base (UNet, VAE, CLIP-L and OpenCLIP bigG text encoders),
a CLIP ViT-L/14 judge and a LLaVA-1.5-7B judge (CUDA only). Each is measured twice on the
same prompts, seeds and batch size:

- raw: the pipeline (or model) called directly, in batches of the size the plugin picked;
- plugin: ``DiffusersGenerator`` / ``ClipAnswerer`` / ``GenerativeAnswerer`` behind the
  request layer (``store.RequestLayer``) with a fresh on-disk cache in a temp folder, so every
  image is PNG-encoded, hashed, checked and written as in a cold run.

    # CPU, a few images, ratios only (each path in its own process: peak RSS is per process)
    python benchmarks/full_size.py --device cpu --cases sd15:fp32,clip-l:fp32,clip-l:bf16 \\
        --images 2 --steps 2 --judge-images 16
    # a GPU: the whole table, and whether generator, judges and LLM fit the card together
    python benchmarks/full_size.py --device cuda --together

Prints, per architecture and dtype, seconds per image (or answer) and peak memory (CPU: the
process's peak RSS; CUDA: ``torch.cuda.max_memory_allocated`` over the path, weights
included), and the ratios plugin / raw (above 1: the plugin is slower or heavier). The rows
go to ``benchmarks/full_size.json`` under the device's name (one entry a device, replaced on
a rerun). Tokenizers are word-level ones built from this script's prompts
(``pytest_t2ibias.testing``), since none can be downloaded; the text encoders keep their
full vocabulary and 77-token context, so the compute is the released model's.
``--tiny`` shrinks every config (plumbing check in seconds, no figures worth keeping).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's plugin, also when run as a script

import numpy as np  # noqa: E402
import torch  # noqa: E402

from pytest_t2ibias.backends._batching import CAP  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "configs"
JSON_PATH = Path(__file__).resolve().parent / "full_size.json"

PROMPTS = [
    "a photo of a doctor", "a photo of a nurse", "a photo of a teacher", "a photo of an engineer",
    "a photo of a ceo", "a photo of a musician", "a photo of a chef", "a photo of a pilot",
]
QUESTION = "what is the gender of the person in the image"
CHOICES = ["man", "woman"]
STATEMENTS = ["a photo of a man", "a photo of a woman"]
WORDS = sorted({w for text in [*PROMPTS, QUESTION, *CHOICES, *STATEMENTS] for w in text.split()})

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
GENERATORS = {"sd15": 512, "sdxl": 1024}
"""Generator architectures and the side of the images they were trained at."""
JUDGES = ("clip-l", "llava-7b")
CUDA_CASES = ("sd15:fp16,clip-l:fp16,llava-7b:fp16,sdxl:fp16,together,sd15:bf16,clip-l:bf16,"
              "sd15:fp32,clip-l:fp32,sdxl:bf16,sdxl:fp32")
"""The most wanted first, so a run cut short still has them; ``together``: every model on
the card at once (``measure_together``)."""
CPU_CASES = "sd15:fp32,clip-l:fp32,clip-l:bf16"

_SMALL_TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2,
               "num_hidden_layers": 1, "projection_dim": 32}
_SMALL_VAE = {"block_out_channels": [16, 16, 32, 32], "norm_num_groups": 8, "layers_per_block": 1}
TINY = {
    "clip_l_text": _SMALL_TEXT,
    "sdxl_text_encoder_2": _SMALL_TEXT,
    "sd15_vae": _SMALL_VAE,
    "sdxl_vae": _SMALL_VAE,
    "sd15_unet": {"block_out_channels": [32, 32, 64, 64], "norm_num_groups": 8,
                  "attention_head_dim": 2, "layers_per_block": 1, "cross_attention_dim": 32},
    "sdxl_unet": {"block_out_channels": [32, 64, 64], "norm_num_groups": 8,
                  "attention_head_dim": [2, 2, 2], "transformer_layers_per_block": [1, 1, 1],
                  "layers_per_block": 1, "cross_attention_dim": 64, "addition_time_embed_dim": 8,
                  "projection_class_embeddings_input_dim": 6 * 8 + 32},
    "clip_vit_l14": {"text_config": _SMALL_TEXT, "projection_dim": 32,
                     "vision_config": {**_SMALL_TEXT, "image_size": 224, "patch_size": 14}},
    "llava15_7b": {"vision_config": {**_SMALL_TEXT, "num_hidden_layers": 2},
                   "text_config": {"hidden_size": 64, "intermediate_size": 128,
                                   "num_attention_heads": 2, "num_key_value_heads": 2,
                                   "num_hidden_layers": 1}},
    "llama2_7b": {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
                  "num_key_value_heads": 2, "num_hidden_layers": 1},
}
"""``--tiny``: every config shrunk (layers, widths) to check the plumbing in seconds."""


# -- building the models ----------------------------------------------------------------------

def config(name: str, tiny: bool) -> dict[str, Any]:
    """A released config from ``configs/`` (its ``_source`` note dropped), shrunk if ``tiny``."""
    loaded = json.loads((CONFIGS / f"{name}.json").read_text())
    loaded.pop("_source", None)
    return _merged(loaded, TINY.get(name, {})) if tiny else loaded


def _merged(base: dict, override: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@contextlib.contextmanager
def building(device: torch.device, dtype: torch.dtype):
    """Parameters made on ``device`` in ``dtype`` (a 7B model never exists in fp32 on the CPU)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    torch.manual_seed(0)
    try:
        with device:
            yield
    finally:
        torch.set_default_dtype(before)


def word_tokenizer(max_length: int):
    from pytest_t2ibias.testing.tokenizer import build_word_tokenizer

    return build_word_tokenizer(WORDS + ["<image>"], model_max_length=max_length)


def clip_text_model(name: str, tokenizer, tiny: bool, *, projection: bool = False):
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    settings = CLIPTextConfig(**config(name, tiny), pad_token_id=tokenizer.pad_token_id,
                              bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    return (CLIPTextModelWithProjection if projection else CLIPTextModel)(settings)


def build_sd15(device: torch.device, dtype: torch.dtype, tiny: bool):
    from diffusers import (
        AutoencoderKL,
        PNDMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )

    tokenizer = word_tokenizer(77)
    with building(device, dtype):
        unet = UNet2DConditionModel.from_config(config("sd15_unet", tiny))
        vae = AutoencoderKL.from_config(config("sd15_vae", tiny))
        text_encoder = clip_text_model("clip_l_text", tokenizer, tiny)
    return StableDiffusionPipeline(
        unet=unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer,
        scheduler=PNDMScheduler.from_config(config("sd15_scheduler", tiny)),
        safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def build_sdxl(device: torch.device, dtype: torch.dtype, tiny: bool):
    from diffusers import (
        AutoencoderKL,
        EulerDiscreteScheduler,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )

    tokenizer = word_tokenizer(77)
    with building(device, dtype):
        unet = UNet2DConditionModel.from_config(config("sdxl_unet", tiny))
        vae = AutoencoderKL.from_config(config("sdxl_vae", tiny))
        text_encoder = clip_text_model("clip_l_text", tokenizer, tiny)
        text_encoder_2 = clip_text_model("sdxl_text_encoder_2", tokenizer, tiny, projection=True)
    return StableDiffusionXLPipeline(
        unet=unet, vae=vae, text_encoder=text_encoder, text_encoder_2=text_encoder_2,
        tokenizer=tokenizer, tokenizer_2=tokenizer,
        scheduler=EulerDiscreteScheduler.from_config(config("sdxl_scheduler", tiny)),
        force_zeros_for_empty_prompt=True)


def build_clip(device: torch.device, dtype: torch.dtype, tiny: bool):
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = word_tokenizer(77)
    settings = config("clip_vit_l14", tiny)
    ids = dict(pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
               eos_token_id=tokenizer.eos_token_id)
    settings["text_config"].update(ids)
    with building(device, dtype):
        model = CLIPModel(CLIPConfig(**settings)).eval()
    side = settings["vision_config"]["image_size"]
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(
        size={"shortest_edge": side}, crop_size={"height": side, "width": side}), tokenizer=tokenizer)
    return model, processor


def build_llava(device: torch.device, dtype: torch.dtype, tiny: bool):
    from transformers import (
        CLIPImageProcessor,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = word_tokenizer(4096)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    settings = config("llava15_7b", tiny)
    settings["text_config"].update(pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                   eos_token_id=tokenizer.eos_token_id)
    with building(device, dtype):
        model = LlavaForConditionalGeneration(LlavaConfig(
            **settings, image_token_index=tokenizer.convert_tokens_to_ids("<image>"))).eval()
    side = settings["vision_config"]["image_size"]
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": side},
                                           crop_size={"height": side, "width": side}),
        tokenizer=tokenizer, patch_size=settings["vision_config"]["patch_size"],
        vision_feature_select_strategy="default", num_additional_image_tokens=1)
    return model, processor


def build_llm(device: torch.device, dtype: torch.dtype, tiny: bool):
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_tokenizer(4096)
    with building(device, dtype):
        model = LlamaForCausalLM(LlamaConfig(**config("llama2_7b", tiny), pad_token_id=tokenizer.pad_token_id,
                                             bos_token_id=tokenizer.bos_token_id,
                                             eos_token_id=tokenizer.eos_token_id)).eval()
    return model, tokenizer


# -- measuring ----------------------------------------------------------------------------------

def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Peak:
    """Peak memory over a block: CUDA's allocator peak, or (CPU) the process's peak RSS."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.bytes = 0

    def __enter__(self) -> Peak:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.bytes = torch.cuda.max_memory_allocated(self.device)
        else:  # ru_maxrss is KiB on Linux; one path a process, so it is this path's peak
            self.bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def allocated(device: torch.device) -> int:
    """Bytes the allocator holds for tensors (CUDA); the process's RSS elsewhere."""
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device)
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


PROFILE: dict[str, str] = {}
"""``--profile``: the plugin path's busiest functions, by case (printed and saved in its row)."""


CPU_SECONDS: dict[str, float] = {}
"""The last ``timed`` call's process CPU seconds (user + sys, every thread: the writers'
too), under "last": on a shared box the steadier figure than wall seconds."""


def timed(device: torch.device, work, *args: Any, profile: str = "") -> tuple[float, Any, int]:
    """(seconds, result, peak bytes) of ``work(*args)``; cProfiled when ``profile`` names it;
    its CPU seconds in ``CPU_SECONDS["last"]``."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile() if profile else None
    with Peak(device) as peak:
        sync(device)
        start, cpu_start = time.perf_counter(), os.times()
        if profiler:
            profiler.enable()
        result = work(*args)
        sync(device)
        if profiler:
            profiler.disable()
        seconds, cpu_end = time.perf_counter() - start, os.times()
        CPU_SECONDS["last"] = ((cpu_end.user - cpu_start.user)
                               + (cpu_end.system - cpu_start.system))
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
        PROFILE[profile] = text.getvalue()
        print(PROFILE[profile], flush=True)
    return seconds, result, peak.bytes


def image_requests(n: int, steps: int, side: int):
    from pytest_t2ibias._types import ImageRequest

    return [ImageRequest(prompt=PROMPTS[i % len(PROMPTS)], seed=0, index=i // len(PROMPTS),
                         steps=steps, height=side, width=side) for i in range(n)]


def raw_generate(pipeline, requests, batch: int) -> list:
    """The pipeline called as a diffusers user would: a list of prompts and one seeded CPU
    generator per image (diffusers' reproducible-batch recipe, the noise the plugin uses)."""
    images = []
    for start in range(0, len(requests), batch):
        chunk = requests[start:start + batch]
        first = chunk[0]
        with torch.no_grad():
            out = pipeline(prompt=[r.prompt for r in chunk],
                           generator=[torch.Generator("cpu").manual_seed(r.noise_seed) for r in chunk],
                           num_inference_steps=first.steps, height=first.height, width=first.width,
                           output_type="pil")
        images.extend(out.images)
    return images


def role_batch(option: str, role: str, default: int) -> int | str:
    """A backend's batch under ``--t2i-batch-size=option`` (None there: its own default)."""
    from pytest_t2ibias._settings import BatchSizes

    size = getattr(BatchSizes.parse(option), role)
    return default if size is None else size


def plugin_layer(cache_dir: str | None, batch: int | str):
    from pytest_t2ibias._settings import BatchSizes
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    sizes = BatchSizes.parse(str(batch))
    return RequestLayer(Cache(None if cache_dir is None else Path(cache_dir)), batch_size=sizes.requests())


def measure_generator(arch: str, dtype_name: str, args, device: torch.device,
                      paths: tuple[str, ...], batch: int | None = None) -> dict[str, Any]:
    from pytest_t2ibias.backends.generator import DiffusersGenerator

    dtype = DTYPES[dtype_name]
    pipeline = (build_sd15 if arch == "sd15" else build_sdxl)(device, dtype, args.tiny)
    pipeline.set_progress_bar_config(disable=True)
    side = 64 if args.tiny else (args.side or GENERATORS[arch])
    steps = args.steps
    n = args.images if args.images else {"sd15": 16, "sdxl": 8}[arch] // (2 if dtype_name == "fp32" else 1)
    requests = image_requests(n, steps, side)
    row: dict[str, Any] = {"arch": arch, "dtype": dtype_name, "role": "generator", "side": side,
                           "steps": steps, "items": n, "unit": "image", "resident_bytes": allocated(device)}
    if device.type == "cuda":  # kernels chosen and loaded, at the timed batch's shapes, before
        # either path is timed: the first path timed would otherwise pay for both
        raw_generate(pipeline, image_requests(1, 2, side), 1)
        raw_generate(pipeline, image_requests(min(n, CAP), 2, side), min(n, CAP))
    outputs: dict[str, list] = {}
    memos: list[str] = []  # each first run's memo folder; plugin-later reads the first one
    timings: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.repeat):  # rounds of every path, so drift hits each path alike
        for path in paths:
            if path.startswith("plugin"):
                # plugin: the option as given, a first run on the device (auto probes, then
                # remembers the cost an image in a fresh memo folder); plugin-later: a later
                # run (the first run's memo, no probe); -fixed: the batch found, given;
                # -nocache: that, with no disk cache behind it
                option = args.plugin_batch if path in ("plugin", "plugin-later") else str(batch)
                if path == "plugin":
                    memos.append(tempfile.mkdtemp(prefix="t2ibias-batches-"))
                memo = (Path(memos[-1]) if path == "plugin" else
                        Path(memos[0]) if path == "plugin-later" and memos else None)
                with tempfile.TemporaryDirectory(prefix="t2ibias-full-size-") as cache:
                    layer = plugin_layer(None if path == "plugin-nocache" else cache, option)
                    generator = DiffusersGenerator(pipeline, model_fingerprint=f"random-{arch}",
                                                   batch_size=role_batch(option, "generator", 8),
                                                   device=device, dtype=dtype, batch_memo=memo)
                    seconds, images, peak = timed(device, layer.images, generator, requests,
                                                  profile=f"{arch}:{dtype_name}" if args.profile and path == "plugin" else "")
                    cpu = CPU_SECONDS["last"]
                    flush_seconds, _, _ = timed(device, layer.flush)  # a session pays it once, at its end
                    cpu += CPU_SECONDS["last"]
                outputs[path] = [item.image for item in images]
                if path in ("plugin", "plugin-later"):
                    row.setdefault("batch_found_by", {})[path] = generator.batch.found_by
                if path == "plugin":
                    batch = generator.batch_size
                    row.update(batch=batch, request_layer_batch=layer.batch_size)
            else:
                if batch is None:
                    raise SystemExit("raw needs the plugin's batch size (--batch)")
                seconds, images, peak = timed(device, raw_generate, pipeline, requests, batch)
                cpu, flush_seconds = CPU_SECONDS["last"], 0.0
                outputs[path] = images
                row["batch"] = batch
            timings.setdefault(path, []).append(
                {"seconds": seconds, "peak_bytes": peak, "cpu_seconds": cpu, "flush_seconds": flush_seconds})
            print(f"  {arch} {dtype_name} {path}: {n} images in {seconds:.2f} s, peak {peak / 2**30:.2f} GiB",
                  flush=True)
    for path, runs in timings.items():
        row[path] = summary(runs, n)
    if f"{arch}:{dtype_name}" in PROFILE:
        row["plugin_profile"] = PROFILE[f"{arch}:{dtype_name}"]
    if "plugin" in outputs and "raw" in outputs:
        row["max_pixel_difference"] = max(
            int(np.abs(np.asarray(a, dtype=int) - np.asarray(b.convert("RGB"), dtype=int)).max())
            for a, b in zip(outputs["plugin"], outputs["raw"]))
    return row


def summary(runs: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """One path's figures over its rounds: the median seconds (and CPU seconds), the highest
    peak, every round's seconds."""
    import statistics

    seconds = statistics.median(r["seconds"] for r in runs)
    return {"seconds": seconds, "per_second": n / seconds,
            "peak_bytes": max(r["peak_bytes"] for r in runs),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
            "flush_seconds": statistics.median(r["flush_seconds"] for r in runs),
            "rounds": [round(r["seconds"], 4) for r in runs]}


def judge_images(n: int, side: int) -> list:
    """``n`` different images of the generators' size (smoothed noise: a judge's input cost
    depends on its size, not its content)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, size=(n, side // 16, side // 16, 3), dtype=np.uint8)
    return [Image.fromarray(a).resize((side, side), Image.BILINEAR) for a in small]


def image_set(images: list):
    from pytest_t2ibias._types import GeneratedImage, ImageSet
    from pytest_t2ibias.store.cache import content_hash

    # The hash is the generator's work in a run (the image's key), so it is made untimed.
    return ImageSet(tuple(GeneratedImage(prompt=PROMPTS[i % len(PROMPTS)], seed=0, index=i, image=image,
                                         key=f"bench-{i}", content_hash=content_hash(image))
                          for i, image in enumerate(images)))


def _features(output: Any) -> torch.Tensor:
    return output if isinstance(output, torch.Tensor) else output.pooler_output


def raw_clip(model, processor, images: list, batch: int, device: torch.device) -> np.ndarray:
    """Zero-shot CLIP as its model card shows it: statements encoded once, images in batches."""
    with torch.no_grad():
        text = processor(text=STATEMENTS, return_tensors="pt", padding=True)
        text_features = _features(model.get_text_features(**{k: v.to(device) for k, v in text.items()})).float()
        text_features = torch.nn.functional.normalize(text_features, dim=-1)
        scale = model.logit_scale.exp().float()
        rows = []
        for start in range(0, len(images), batch):
            pixels = processor(images=images[start:start + batch], return_tensors="pt")["pixel_values"]
            features = _features(model.get_image_features(pixel_values=pixels.to(device, model.dtype))).float()
            features = torch.nn.functional.normalize(features, dim=-1)
            rows.append(torch.softmax(scale * features @ text_features.T, dim=-1).cpu().numpy())
    return np.concatenate(rows)


def raw_llava(model, processor, images: list, batch: int, device: torch.device) -> np.ndarray:
    """Each choice's mean token log-probability after ``<image>\\n{question}\\n``, every
    (image, choice) pair of a batch in one forward pass, logits kept for the choices only."""
    tokenizer = processor.tokenizer
    text = f"<image>\n{QUESTION}\n"
    choice_ids = [tokenizer(choice, add_special_tokens=False)["input_ids"] for choice in CHOICES]
    longest = max(len(ids) for ids in choice_ids)
    rows = []
    with torch.no_grad():
        for start in range(0, len(images), batch):
            chunk = images[start:start + batch]
            inputs = processor(images=chunk, text=[text] * len(chunk), return_tensors="pt")
            prompt = inputs["input_ids"]
            if prompt[0, -1] == tokenizer.eos_token_id:  # the answer continues the prompt
                prompt = prompt[:, :-1]
            length = prompt.shape[1]
            ids = torch.full((len(chunk) * len(CHOICES), length + longest), tokenizer.pad_token_id)
            mask = torch.zeros_like(ids)
            for i in range(len(chunk)):
                for c, answer in enumerate(choice_ids):
                    r = i * len(CHOICES) + c
                    ids[r, :length] = prompt[i]
                    ids[r, length:length + len(answer)] = torch.tensor(answer)
                    mask[r, :length + len(answer)] = 1
            pixels = inputs["pixel_values"].repeat_interleave(len(CHOICES), dim=0).to(device, model.dtype)
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), pixel_values=pixels,
                           logits_to_keep=longest + 1).logits[:, :-1]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            targets = ids[:, length:].to(device)
            kept = mask[:, length:].to(device).float()
            mean = (logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * kept).sum(-1) / kept.sum(-1)
            rows.append(torch.softmax(mean.view(len(chunk), len(CHOICES)), dim=-1).cpu().numpy())
    return np.concatenate(rows)


def measure_judge(arch: str, dtype_name: str, args, device: torch.device,
                  paths: tuple[str, ...], batch: int | None = None) -> dict[str, Any]:
    from pytest_t2ibias.backends.vqa import ClipAnswerer, GenerativeAnswerer

    dtype = DTYPES[dtype_name]
    if arch == "clip-l":
        model, processor = build_clip(device, dtype, args.tiny)
        n = args.judge_images or 256
        raw, plugin_class, default_batch = raw_clip, ClipAnswerer, 16
    else:
        model, processor = build_llava(device, dtype, args.tiny)
        n = args.judge_images or 32
        raw, plugin_class, default_batch = raw_llava, GenerativeAnswerer, 8
    images = judge_images(n, 64 if args.tiny else 512)
    items = image_set(images)
    row: dict[str, Any] = {"arch": arch, "dtype": dtype_name, "role": "judge", "items": n,
                           "unit": "answer", "choices": len(CHOICES), "resident_bytes": allocated(device)}
    if device.type == "cuda":  # warmed at the timed batch's shapes (above)
        raw(model, processor, images[:2], 2, device)
        raw(model, processor, images[:min(n, CAP)], min(n, CAP), device)
    outputs: dict[str, np.ndarray] = {}
    timings: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.repeat):  # rounds of every path, so drift hits each path alike
        for path in paths:
            if path == "plugin-later":  # a judge sizes on its first batch, kept: nothing to remember
                continue
            if path.startswith("plugin"):
                # the diagnostics get the batch the plugin found, as the judges' role's size
                option = args.plugin_batch if path == "plugin" else f"vqa={batch}"
                with tempfile.TemporaryDirectory(prefix="t2ibias-full-size-") as cache:
                    layer = plugin_layer(None if path == "plugin-nocache" else cache, args.plugin_batch)
                    answerer = plugin_class(model, processor, model_fingerprint=f"random-{arch}", device=device,
                                            batch_size=role_batch(option, "vqa", default_batch))
                    seconds, answers, peak = timed(device, layer.answers, answerer, items, QUESTION, CHOICES,
                                                   STATEMENTS if arch == "clip-l" else None,
                                                   profile=f"{arch}:{dtype_name}" if args.profile and path == "plugin" else "")
                    cpu = CPU_SECONDS["last"]
                    flush_seconds, _, _ = timed(device, layer.flush)
                    cpu += CPU_SECONDS["last"]
                outputs[path] = answers.probabilities
                if path == "plugin":
                    batch = answerer.batch.size
                    row.update(batch=batch, batch_found_by=answerer.batch.found_by)
            else:
                if batch is None:
                    raise SystemExit("raw needs the plugin's batch size (--batch)")
                # raw-unbatched: one image a forward pass, as the plugin's generative answerer does
                size = 1 if path == "raw-unbatched" else batch
                seconds, probabilities, peak = timed(device, raw, model, processor, images, size, device)
                cpu, flush_seconds = CPU_SECONDS["last"], 0.0
                outputs[path] = probabilities
            timings.setdefault(path, []).append(
                {"seconds": seconds, "peak_bytes": peak, "cpu_seconds": cpu, "flush_seconds": flush_seconds})
            print(f"  {arch} {dtype_name} {path}: {n} answers in {seconds:.2f} s, peak {peak / 2**30:.2f} GiB",
                  flush=True)
    for path, runs in timings.items():
        row[path] = summary(runs, n)
    if f"{arch}:{dtype_name}" in PROFILE:
        row["plugin_profile"] = PROFILE[f"{arch}:{dtype_name}"]
    if "plugin" in outputs and "raw" in outputs:
        row["max_probability_difference"] = float(np.nanmax(np.abs(outputs["plugin"] - outputs["raw"])))
    return row


def measure(case: str, args, device: torch.device, paths: tuple[str, ...], batch: int | None = None) -> dict:
    arch, dtype_name = case.split(":")
    if arch in GENERATORS:
        return measure_generator(arch, dtype_name, args, device, paths, batch)
    if arch in JUDGES:
        return measure_judge(arch, dtype_name, args, device, paths, batch)
    raise SystemExit(f"unknown architecture {arch!r}: {', '.join([*GENERATORS, *JUDGES])}")


def cuda_paths(case: str, diagnostics: bool = False) -> tuple[str, ...]:
    """The plugin first (it picks the batch), a generator's later run (its batch remembered),
    then raw at that batch; with ``diagnostics`` at half precision also the paths that say
    where a plugin cost is: the batch given instead of found, no disk cache, and (LLaVA) raw
    one image a pass, as the plugin scores."""
    arch, dtype_name = case.split(":")
    main = ("plugin", "plugin-later", "raw") if arch in GENERATORS else ("plugin", "raw")
    if dtype_name == "fp32" or not diagnostics:
        return main
    if arch in GENERATORS:
        return (*main, "plugin-fixed", "plugin-nocache")
    return (*main, "plugin-nocache", *(("raw-unbatched",) if arch == "llava-7b" else ()))


def measure_in_processes(case: str, args) -> dict:
    """CPU: each path in a fresh process (peak RSS never comes down within one); the plugin
    first, so the raw path gets the batch size it picked."""
    def one(path: str, batch: int | None) -> dict:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
            target = out.name
        command = [sys.executable, __file__, "--device", "cpu", "--cases", case, "--only", path,
                   "--row-to", target, "--images", str(args.images), "--steps", str(args.steps),
                   "--judge-images", str(args.judge_images), "--plugin-batch", str(args.plugin_batch),
                   "--side", str(args.side),
                   "--threads", str(args.threads)]
        command += ["--tiny"] if args.tiny else []
        command += ["--batch", str(batch)] if batch is not None else []
        subprocess.run(command, check=True)
        row = json.loads(Path(target).read_text())
        os.unlink(target)
        return row

    plugin = one("plugin", None)
    raw = one("raw", plugin["batch"])
    return {**plugin, "raw": raw["raw"]}


def add_ratios(row: dict) -> dict:
    if "plugin-later" in row and "raw" in row:
        row["time_ratio_later"] = row["plugin-later"]["seconds"] / row["raw"]["seconds"]
        row["memory_ratio_later"] = row["plugin-later"]["peak_bytes"] / row["raw"]["peak_bytes"]
    if "plugin" in row and "raw" in row:
        row["time_ratio"] = row["plugin"]["seconds"] / row["raw"]["seconds"]
        row["memory_ratio"] = row["plugin"]["peak_bytes"] / row["raw"]["peak_bytes"]
        if row["raw"].get("cpu_seconds"):  # CPU seconds, the session's final flush included
            row["cpu_ratio"] = row["plugin"]["cpu_seconds"] / row["raw"]["cpu_seconds"]
    return row


# -- generator, judges and LLM on one card -----------------------------------------------------

def measure_together(args, device: torch.device) -> dict[str, Any]:
    """SDXL, the CLIP-L and LLaVA-7B judges and a Llama-2-7B LLM, all fp16 on one card at
    once, each used through the plugin: do they fit without offloading?"""
    from pytest_t2ibias.backends.generator import DiffusersGenerator
    from pytest_t2ibias.backends.llm import CausalLM
    from pytest_t2ibias.backends.vqa import ClipAnswerer, GenerativeAnswerer

    dtype = torch.float16 if device.type == "cuda" else torch.float32
    start = allocated(device)
    weights: dict[str, int] = {}

    def loaded(name: str, before: int) -> None:
        weights[name] = allocated(device) - before

    before = allocated(device)
    pipeline = build_sdxl(device, dtype, args.tiny)
    loaded("sdxl", before)
    before = allocated(device)
    clip, clip_processor = build_clip(device, dtype, args.tiny)
    loaded("clip-l", before)
    before = allocated(device)
    llava, llava_processor = build_llava(device, dtype, args.tiny)
    loaded("llava-7b", before)
    before = allocated(device)
    llm_model, llm_tokenizer = build_llm(device, dtype, args.tiny)
    loaded("llama-7b", before)
    side = 64 if args.tiny else GENERATORS["sdxl"]
    with tempfile.TemporaryDirectory(prefix="t2ibias-full-size-") as cache, Peak(device) as peak:
        layer = plugin_layer(cache, args.plugin_batch)
        generator = DiffusersGenerator(pipeline, model_fingerprint="random-sdxl", batch_size=args.plugin_batch,
                                       device=device, dtype=dtype)
        images = layer.images(generator, image_requests(8, args.steps, side))
        layer.answers(ClipAnswerer(clip, clip_processor, model_fingerprint="random-clip", device=device,
                                   batch_size=args.plugin_batch), images, QUESTION, CHOICES, STATEMENTS)
        layer.answers(GenerativeAnswerer(llava, llava_processor, model_fingerprint="random-llava",
                                         device=device, batch_size=args.plugin_batch),
                      images, QUESTION, CHOICES)
        CausalLM(llm_model, llm_tokenizer, model_fingerprint="random-llama", device=device
                 ).log_likelihood(PROMPTS)
        layer.flush()
    total = (torch.cuda.get_device_properties(device).total_memory if device.type == "cuda"
             else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    row = {"models": list(weights), "dtype": str(dtype).removeprefix("torch."), "weights_bytes": weights,
           "resident_before_bytes": start, "peak_bytes": peak.bytes, "device_total_bytes": total,
           "fits": peak.bytes < total, "generator_batch": generator.batch_size,
           "offload": "none needed" if peak.bytes < total else "needed"}
    print(f"  together: weights {sum(weights.values()) / 2**30:.1f} GiB, peak {peak.bytes / 2**30:.1f} GiB "
          f"of {total / 2**30:.1f} GiB: {'fits' if row['fits'] else 'does not fit'}", flush=True)
    return row


# -- the run -----------------------------------------------------------------------------------

def environment(device: torch.device) -> dict[str, Any]:
    import diffusers
    import transformers

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else (platform.processor() or "cpu")
    if device.type == "cpu":
        name = f"{_cpu_model()} ({len(os.sched_getaffinity(0))} usable CPUs, {torch.get_num_threads()} torch threads)"
    return {"device": name, "torch": torch.__version__, "diffusers": diffusers.__version__,
            "transformers": transformers.__version__, "python": platform.python_version(),
            "cuda": torch.version.cuda,
            "tokenizers": "word-level, built from the benchmark's prompts "
                          "(pytest_t2ibias.testing): no tokenizer can be downloaded",
            "weights": "random (default init), built from benchmarks/configs/"}


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "cpu"


def show(rows: list[dict]) -> None:
    print(f"\n{'arch':9} {'dtype':5} {'batch':>5} {'n':>4} {'raw /s':>8} {'plugin /s':>9} "
          f"{'time p/r':>8} {'later p/r':>9} {'cpu p/r':>7} {'raw GiB':>8} {'plugin GiB':>10} {'mem p/r':>7}")
    for row in rows:
        if "error" in row:
            print(f"{row['arch']:9} {row['dtype']:5} ERROR: {row['error']}")
            continue
        print(f"{row['arch']:9} {row['dtype']:5} {row['batch']:>5} {row['items']:>4} "
              f"{row['raw']['per_second']:>8.3f} {row['plugin']['per_second']:>9.3f} "
              f"{row['time_ratio']:>8.3f} {row.get('time_ratio_later', float('nan')):>9.3f} "
              f"{row.get('cpu_ratio', float('nan')):>7.3f} "
              f"{row['raw']['peak_bytes'] / 2**30:>8.2f} "
              f"{row['plugin']['peak_bytes'] / 2**30:>10.2f} {row['memory_ratio']:>7.3f}")
    print("time p/r: plugin seconds / raw seconds (a first run: auto probes); later p/r: the same "
          "for a later run on the device (the batch remembered); cpu p/r: the same in process CPU seconds, the "
          "final flush included; mem p/r: plugin peak / raw peak (above 1: the plugin costs more)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--cases", help="arch:dtype,... (archs: sd15 sdxl clip-l llava-7b; dtypes: fp32 fp16 bf16)")
    parser.add_argument("--images", type=int, default=0, help="images a generator row (0: 16 SD1.5, 8 SDXL, "
                        "halved at fp32)")
    parser.add_argument("--judge-images", type=int, default=0, help="images a judge row (0: 256 CLIP, 32 LLaVA)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--side", type=int, default=0,
                        help="generated images' side in px (0: the architecture's own; smaller: a "
                             "reduced-size CPU run, the networks still full size)")
    parser.add_argument("--plugin-batch", default=None,
                        help="the plugin's --t2i-batch-size (default: auto on CUDA, its default 8 on CPU)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on CPU (a shared box: 1)")
    parser.add_argument("--together", action="store_true",
                        help="CUDA: also load every model at once (the case 'together')")
    parser.add_argument("--paths", help="CUDA: the paths to run, e.g. plugin,raw,plugin-fixed "
                        "(default: plugin and raw, and at half precision the diagnostics)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="CUDA: rounds of every path (the figures: each path's median)")
    parser.add_argument("--diagnostics", action="store_true",
                        help="CUDA, half precision: also the batch given and no disk cache")
    parser.add_argument("--profile", action="store_true", help="cProfile the plugin path (by own time)")
    parser.add_argument("--tiny", action="store_true", help="shrunk configs: a plumbing check, no figures")
    parser.add_argument("--json", type=Path, default=JSON_PATH)
    parser.add_argument("--label", default="", help="appended to the device's name in the JSON "
                        "(a second run on one device, e.g. more items, kept beside the first)")
    parser.add_argument("--only", choices=["raw", "plugin"], help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--row-to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.plugin_batch is None:
        args.plugin_batch = "auto" if device.type == "cuda" else "8"
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    if args.only:  # one path of one case, in a process of its own (CPU)
        row = measure(args.cases, args, device, (args.only,), args.batch)
        args.row_to.write_text(json.dumps(row))
        return
    cases = (args.cases or (CUDA_CASES if device.type == "cuda" else CPU_CASES)).split(",")
    run = {**environment(device), "label": args.label, "tiny": args.tiny, "steps": args.steps, "side": args.side or None,
           "plugin_batch_size_option": args.plugin_batch, "command": " ".join(sys.argv), "rows": []}
    skipped = [] if device.type == "cuda" else [
        {"arch": "llava-7b", "why": "a 7B judge at fp32 is 28 GB of weights and minutes an answer on "
                                    "this CPU: measured on a GPU only"},
        {"arch": "sdxl", "why": "a 1024-px SDXL image takes minutes a step on a shared 2-CPU box: "
                                "measured on a GPU only"}]
    run["skipped"] = skipped
    for case in cases:
        print(f"{case}:", flush=True)
        if case == "together":
            if device.type == "cuda" and args.together:
                try:
                    run["together"] = measure_together(args, device)
                except Exception as exc:  # reported, the table goes on
                    traceback.print_exc()
                    run["together"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                _save(args.json, run)
            continue
        try:
            if device.type == "cuda":
                paths = (tuple(args.paths.split(",")) if args.paths
                         else cuda_paths(case, args.diagnostics))
                row = measure(case, args, device, paths)
            else:
                row = measure_in_processes(case, args)
        except Exception as exc:  # one broken case is a row, the table goes on
            traceback.print_exc()
            arch, dtype_name = case.split(":")
            row = {"arch": arch, "dtype": dtype_name, "error": f"{type(exc).__name__}: {exc}"[:500]}
        run["rows"].append(add_ratios(row))
        _save(args.json, run)
        if device.type == "cuda":  # this case's models go before the next is built
            gc.collect()
            torch.cuda.empty_cache()
    show(run["rows"])
    for item in skipped:
        print(f"skipped {item['arch']}: {item['why']}")
    print(f"tokenizers: {run['tokenizers']}\nwrote {args.json}")


def _save(path: Path, run: dict) -> None:
    """``run`` under its device's name in ``path``, the other devices' runs kept."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        saved = {}
    runs = saved.setdefault("runs", {})
    label = f" ({run['label']})" if run.get("label") else ""
    runs[("tiny: " if run["tiny"] else "") + run["device"] + label] = run
    path.write_text(json.dumps(saved, indent=1) + "\n")


if __name__ == "__main__":
    main()
