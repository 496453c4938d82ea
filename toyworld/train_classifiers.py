"""Per-axis attribute classifiers for the toy world: the ground-truth readers of generated images.

One small ResNet per subject kind (people, objects) is trained multi-task, one linear head per
axis, on freshly rendered images whose attributes are drawn uniformly and independently: every
value is equally frequent and no axis can be read off another. Each axis is then saved as its
own ``ResNetForImageClassification`` (a copy of the backbone + that axis's head, ``id2label`` =
the axis values), so the plugin loads it with ``AutoModelForImageClassification``.

Training images are mildly degraded (blur, down-and-up scaling, noise, brightness) because the
images the toy diffusion model generates are softer than the renderer's.

Axes in ``JUDGED_BY_CLIP`` get no classifier but are still drawn, uniformly, in the training
renders: the other heads must read a striped or dotted object as well as a plain one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from toyworld.render import render_image
from toyworld.spec import Axis, World

logger = logging.getLogger(__name__)

IMAGE_SIZE = 32
PIXEL_MEAN = (0.5, 0.5, 0.5)
PIXEL_STD = (0.5, 0.5, 0.5)

JUDGED_BY_CLIP = ("pattern",)
"""Axes without a classifier: toy-clip judges them (its judge audit reads the pattern at
0.935), and a classifier would make ``toyworld.quality`` hold toy-sd's cars to a uniform
pattern it does not draw (3 px dots do not survive its VAE: 71% plain)."""

# Streams of the seed: training and held-out images never share a render seed.
TRAIN_STREAM, HELD_OUT_STREAM = 1, 2

BACKBONE = {"embedding_size": 32, "hidden_sizes": [32, 64, 128], "depths": [1, 1, 1], "layer_type": "basic",
                "downsample_in_first_stage": False}
FULL_BUDGET = {"images": {"person": 24000, "object": 4000}, "epochs": {"person": 12, "object": 6},
                   "held_out": {"person": 2000, "object": 500}, "batch_size": 128, "learning_rate": 3e-3, "weight_decay": 0.05}
QUICK_BUDGET = {"images": {"person": 1500, "object": 300}, "epochs": {"person": 1, "object": 1},
                    "held_out": {"person": 200, "object": 100}, "batch_size": 64, "learning_rate": 3e-3, "weight_decay": 0.05}


# -- data ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BalancedRenders:
    """Rendered images with, per axis, each image's value index, and each image's subject name."""

    images: np.ndarray
    labels: dict[str, np.ndarray]
    subjects: np.ndarray


def render_balanced(world: World, kind: str, n: int, seed: int | Sequence[int]) -> BalancedRenders:
    """``n`` images of ``kind`` subjects with every axis value drawn uniformly and independently.

    The subject (hence its prop or shape) is drawn uniformly too, so no axis rides on it.
    """
    rng = np.random.default_rng(seed)
    axes = [axis for axis in world.axes.values() if axis.applies_to == kind]
    subjects = [s for s in world.subjects.values() if s.kind == kind]
    labels = {axis.name: rng.integers(len(axis.values), size=n) for axis in axes}
    which = rng.integers(len(subjects), size=n)
    render_seeds = rng.integers(2**31 - 1, size=n)
    images = np.empty((n, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
    for i in range(n):
        attributes = {axis.name: axis.values[labels[axis.name][i]] for axis in axes}
        images[i] = np.asarray(render_image(attributes, subjects[which[i]].look, int(render_seeds[i]), IMAGE_SIZE))
    return BalancedRenders(images, labels, np.array([subjects[i].name for i in which], dtype=object))


def to_unit_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 ``(N, H, W, 3)`` -> float ``(N, 3, H, W)`` in [0, 1]."""
    return torch.tensor(images).permute(0, 3, 1, 2).float() / 255.0


def normalize(pixels: torch.Tensor) -> torch.Tensor:
    """[0, 1] pixels -> the model's input, exactly as the saved image processor does it."""
    mean = torch.tensor(PIXEL_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(PIXEL_STD).view(1, 3, 1, 1)
    return (pixels - mean) / std


def degrade(pixels: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Random mild degradations of [0, 1] images, each image its own draw.

    Gaussian blur (half the images, sigma 0.3-0.9 px), a 2x down-and-up scaling (a quarter:
    the softness a VAE decoder leaves), brightness/contrast jitter and pixel noise (all).
    """
    n = pixels.shape[0]

    def draw(low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(n, generator=generator)

    # Per-image Gaussian kernels, applied at once as a grouped convolution.
    sigma = draw(0.3, 0.9) * (torch.rand(n, generator=generator) < 0.5)
    offsets = torch.arange(-2, 3, dtype=torch.float32)
    kernel_1d = torch.exp(-offsets[None] ** 2 / (2 * sigma.clamp(min=1e-3)[:, None] ** 2))
    kernel_1d = kernel_1d / kernel_1d.sum(dim=1, keepdim=True)
    kernels = (kernel_1d[:, :, None] * kernel_1d[:, None, :]).repeat_interleave(3, dim=0)[:, None]
    padded = torch.nn.functional.pad(pixels.reshape(1, n * 3, *pixels.shape[2:]), (2, 2, 2, 2), mode="replicate")
    blurred = torch.nn.functional.conv2d(padded, kernels, groups=n * 3).reshape(pixels.shape)

    size = pixels.shape[-1]
    rescaled = torch.nn.functional.interpolate(
        torch.nn.functional.interpolate(blurred, size=size // 2, mode="area"), size=size, mode="bilinear", align_corners=False
    )
    use_rescaled = (torch.rand(n, generator=generator) < 0.25).view(n, 1, 1, 1)
    out = torch.where(use_rescaled, rescaled, blurred)

    contrast = draw(0.9, 1.1).view(n, 1, 1, 1)
    brightness = draw(-0.05, 0.05).view(n, 1, 1, 1)
    mean = out.mean(dim=(1, 2, 3), keepdim=True)
    out = (out - mean) * contrast + mean + brightness
    noise = draw(0.0, 0.04).view(n, 1, 1, 1) * torch.randn(out.shape, generator=generator)
    return (out + noise).clamp(0.0, 1.0)


# -- model ---------------------------------------------------------------------------------


class MultiHeadClassifier(torch.nn.Module):
    """A ResNet backbone with one linear head per axis (multi-task training only)."""

    def __init__(self, axes: Sequence[Axis]):
        from transformers import ResNetConfig, ResNetModel

        super().__init__()
        self.config = ResNetConfig(num_channels=3, **BACKBONE)
        self.backbone = ResNetModel(self.config)
        self.heads = torch.nn.ModuleDict({axis.name: torch.nn.Linear(self.config.hidden_sizes[-1], len(axis.values)) for axis in axes})

    def forward(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        features = self.backbone(pixel_values=pixel_values).pooler_output.flatten(1)
        return {name: head(features) for name, head in self.heads.items()}


def single_axis_classifier(trained: MultiHeadClassifier, axis: Axis):
    """The ``ResNetForImageClassification`` for one axis: the shared backbone + its head."""
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        num_channels=3,
        **BACKBONE,
        num_labels=len(axis.values),
        id2label=dict(enumerate(axis.values)),
        label2id={value: i for i, value in enumerate(axis.values)},
    )
    model = ResNetForImageClassification(config)
    model.resnet.load_state_dict(trained.backbone.state_dict())
    model.classifier[1].load_state_dict(trained.heads[axis.name].state_dict())
    return model.eval()


def image_processor():
    """Resize to 32x32 (a no-op on rendered images), scale to [0, 1], normalize as in training."""
    from transformers import ViTImageProcessor

    return ViTImageProcessor(
        do_resize=True,
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        resample=Image.BILINEAR,
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=list(PIXEL_MEAN),
        image_std=list(PIXEL_STD),
    )


# -- training ------------------------------------------------------------------------------


def classified_axes(world: World, kind: str) -> list[Axis]:
    """The axes of ``kind`` subjects that get a classifier (all but ``JUDGED_BY_CLIP``)."""
    return [axis for axis in world.axes.values()
            if axis.applies_to == kind and axis.name not in JUDGED_BY_CLIP]


def train_kind(world: World, kind: str, budget: dict, seed: int) -> tuple[MultiHeadClassifier, dict]:
    """Train one multi-head classifier on balanced renders of ``kind`` subjects (every axis
    of the kind drawn, a head for each ``classified_axes``)."""
    axes = classified_axes(world, kind)
    renders = render_balanced(world, kind, budget["images"][kind], seed=(seed, TRAIN_STREAM))
    pixels = to_unit_tensor(renders.images)
    targets = torch.stack([torch.from_numpy(renders.labels[axis.name]) for axis in axes], dim=1)

    torch.manual_seed(seed)
    model = MultiHeadClassifier(axes)
    generator = torch.Generator().manual_seed(seed)
    batch_size, epochs = budget["batch_size"], budget["epochs"][kind]
    steps = epochs * (len(pixels) // batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=budget["learning_rate"], weight_decay=budget["weight_decay"])
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=budget["learning_rate"], total_steps=steps, pct_start=0.15)
    model.train()
    losses = []
    for epoch in range(epochs):
        order = torch.randperm(len(pixels), generator=generator)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            batch = order[start:start + batch_size]
            logits = model(normalize(degrade(pixels[batch], generator)))
            # Every axis counts the same, whatever its number of values.
            loss = sum(torch.nn.functional.cross_entropy(logits[axis.name], targets[batch, i]) for i, axis in enumerate(axes)) / len(axes)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        logger.info("%s classifiers: epoch %d/%d, loss %.4f", kind, epoch + 1, epochs, np.mean(losses[-50:]))
    model.eval()
    return model, {"images": len(pixels), "epochs": epochs, "steps": steps, "final_loss": float(np.mean(losses[-20:]))}


@torch.no_grad()
def held_out_accuracy(model_dir: Path, world: World, axis: Axis, n: int, seed: int) -> dict[str, float]:
    """Accuracy of a saved classifier on fresh renders, loaded and preprocessed as the plugin does.

    ``clean``: the renderer's images; ``degraded``: the same images through :func:`degrade`.
    """
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    model = AutoModelForImageClassification.from_pretrained(model_dir, local_files_only=True).eval()
    processor = AutoImageProcessor.from_pretrained(model_dir, local_files_only=True)
    renders = render_balanced(world, axis.applies_to, n, seed=(seed, HELD_OUT_STREAM))
    truth = torch.from_numpy(renders.labels[axis.name])
    inputs = processor(images=[Image.fromarray(image) for image in renders.images], return_tensors="pt")
    clean = model(pixel_values=inputs["pixel_values"]).logits.argmax(-1)
    degraded_pixels = degrade(to_unit_tensor(renders.images), torch.Generator().manual_seed(seed))
    degraded = model(pixel_values=normalize(degraded_pixels)).logits.argmax(-1)
    per_value = {value: float((clean[truth == i] == i).float().mean()) for i, value in enumerate(axis.values)}
    return {
        "clean": float((clean == truth).float().mean()),
        "degraded": float((degraded == truth).float().mean()),
        "per_value": per_value,
        "images": n,
    }


def train_classifiers(world: World, out_dir: str | Path, *, seed: int = 0, quick: bool = False,
                      kinds: Sequence[str] = ("person", "object")) -> dict:
    """Train and save ``out_dir/classifiers/<axis>`` for every classified axis of ``world``
    (of the subject ``kinds`` given: one kind can be retrained alone, the other's files are
    left as they are).

    Returns the training configuration and the held-out accuracy per axis (for the manifest).
    """
    budget = QUICK_BUDGET if quick else FULL_BUDGET
    root = Path(out_dir) / "classifiers"
    report: dict = {
        "architecture": "ResNetForImageClassification",
        "backbone": BACKBONE,
        "image_size": IMAGE_SIZE,
        "pixel_mean": list(PIXEL_MEAN),
        "pixel_std": list(PIXEL_STD),
        "augmentation": "gaussian blur p=0.5 sigma 0.3-0.9; 2x down-up p=0.25; contrast 0.9-1.1; brightness +-0.05; noise std 0-0.04",
        "budget": budget,
        "seed": seed,
        "training": {},
        "axes": {},
    }
    for kind in kinds:
        axes = classified_axes(world, kind)
        if not axes:
            continue
        started = time.perf_counter()
        model, training = train_kind(world, kind, budget, seed)
        training["wall_s"] = round(time.perf_counter() - started, 1)
        report["training"][kind] = training
        for axis in axes:
            axis_dir = root / axis.name
            single_axis_classifier(model, axis).save_pretrained(axis_dir, safe_serialization=True)
            image_processor().save_pretrained(axis_dir)
            accuracy = held_out_accuracy(axis_dir, world, axis, budget["held_out"][kind], seed)
            report["axes"][axis.name] = {"values": list(axis.values), "held_out_accuracy": accuracy}
            (axis_dir / "training.json").write_text(json.dumps({"axis": axis.name, "kind": kind, **training, "held_out_accuracy": accuracy}, indent=2) + "\n")
        training["parameters_per_classifier"] = sum(p.numel() for p in single_axis_classifier(model, axes[0]).parameters())
    return report
