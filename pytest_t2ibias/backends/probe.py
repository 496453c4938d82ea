"""Linear attribute probes on h-space, one head per denoising step, saved with what they assume.

DiffLens (shi2025dissecting) and BGPS (seeds/001, A.5) classify an image's attribute from the
UNet mid-block activation with "a linear head per diffusion step", trained on prompts that name
the attribute ("a photo of a male person"), labels taken from the prompt. Their checkpoints
are bare state_dicts: which head is which timestep, the layer, scheduler, resolution and class
order are implicit (and differ between the two repositories). Here every probe is a directory

    probe.safetensors   weight (steps, classes, features), bias, feature mean and scale
    probe.json          axis, class order, layer, pooling, step indices and their timesteps,
                        scheduler and its config, resolution, guidance, generator fingerprint,
                        training prompts and counts, held-out accuracy per step

and :meth:`LinearProbe.load` refuses a probe whose metadata does not match the generator it is
about to read. :func:`probe_directory` names a probe by everything it depends on, so
:func:`load_or_train_probe` trains once per generator and reuses the probe warm.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BackendError, ProbeMismatchError

FORMAT_VERSION = 1
WEIGHTS_FILE = "probe.safetensors"
METADATA_FILE = "probe.json"
PERSON_TEMPLATE = "a photo of a {value} person"
SUBJECT_TEMPLATE = "a photo of a {value} {subject}"
# Fields of HSpaceReader.describe() a probe must agree on, in the order a mismatch is reported.
MATCHED_FIELDS = (
    "generator_fingerprint", "layer", "pooling", "height", "width", "steps", "guidance_scale",
    "scheduler", "scheduler_config",
)


@dataclass(frozen=True)
class ProbeTraining:
    """How a probe is trained: part of its cache key and its metadata."""

    images_per_prompt: int = 16
    seed: int = 0
    held_out_fraction: float = 0.25
    l2: float = 1e-2
    max_iter: int = 200

    def noise_seeds(self) -> list[int]:
        """The same noise for every prompt: the labels differ, the latents do not, so the probe
        has to read the prompt's effect, not the noise."""
        return [self.seed * 100_000 + j for j in range(self.images_per_prompt)]

    def held_out_images(self) -> int:
        return max(1, round(self.images_per_prompt * self.held_out_fraction))


def labelled_prompts(
    choices: Sequence[str],
    subjects: Sequence[str] = (),
    *,
    phrases: dict[str, str] | None = None,
    template: str = PERSON_TEMPLATE,
    subject_template: str = SUBJECT_TEMPLATE,
) -> list[tuple[str, int]]:
    """(prompt, class index) pairs naming each value: "a photo of a {value} person", then the
    same for every subject. ``phrases`` maps a value to its wording in a prompt (default: itself)."""
    phrases = phrases or {}
    pairs = []
    for label, value in enumerate(choices):
        word = phrases.get(value, value)
        pairs.append((template.format(value=word), label))
        pairs.extend((subject_template.format(value=word, subject=s), label) for s in subjects)
    return pairs


@dataclass
class LinearProbe:
    """Multinomial logistic regression heads on standardised h, one per step index."""

    metadata: dict
    weight: np.ndarray  # (steps, classes, features)
    bias: np.ndarray  # (steps, classes)
    mean: np.ndarray  # (steps, features)
    scale: np.ndarray  # (steps, features)
    path: Path | None = None

    @property
    def axis(self) -> str:
        return self.metadata["axis"]

    @property
    def classes(self) -> list[str]:
        return list(self.metadata["classes"])

    @property
    def step_indices(self) -> list[int]:
        return [int(i) for i in self.metadata["step_indices"]]

    @property
    def held_out_accuracy(self) -> dict[int, float]:
        return {int(i): float(a) for i, a in self.metadata["held_out_accuracy"].items()}

    def _head(self, step_index: int) -> int:
        try:
            return self.step_indices.index(int(step_index))
        except ValueError:
            raise ProbeMismatchError(
                f"the {self.axis} probe{_at(self.path)} has heads for step indices {self.step_indices}, "
                f"not {step_index}; pick one of those or train a probe with it in step_indices."
            ) from None

    def probabilities(self, features: np.ndarray, step_index: int) -> np.ndarray:
        """p(class | h) for features (..., features) at one step: (..., classes)."""
        head = self._head(step_index)
        z = (np.asarray(features, dtype=np.float64) - self.mean[head]) / self.scale[head]
        logits = z @ self.weight[head].T.astype(np.float64) + self.bias[head]
        logits -= logits.max(axis=-1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=-1, keepdims=True)

    # -- compatibility --------------------------------------------------------------------

    def mismatches(self, reader: Any, step_index: int | None = None) -> list[str]:
        """What differs between this probe's assumptions and ``reader`` (empty: compatible)."""
        expected = self.metadata["generator"]
        actual = json.loads(json.dumps(reader.describe()))
        problems: list[str] = []
        for field in MATCHED_FIELDS:
            theirs, ours = expected.get(field), actual.get(field)
            if theirs == ours:
                continue
            if isinstance(theirs, dict) and isinstance(ours, dict):
                keys = sorted(k for k in {*theirs, *ours} if theirs.get(k) != ours.get(k))
                problems.extend(f"{field}.{k}: probe {_short(theirs.get(k))}, generator {_short(ours.get(k))}"
                                for k in keys)
            else:
                problems.append(f"{field}: probe {_short(theirs)}, generator {_short(ours)}")
        if "steps" not in {p.split(":")[0] for p in problems}:
            timesteps = reader.timesteps()
            for index, value in zip(self.step_indices, self.metadata["timesteps"]):
                if timesteps[index] != value:
                    problems.append(f"timestep at step index {index}: probe {value}, generator {timesteps[index]}")
        if step_index is not None and int(step_index) not in self.step_indices:
            problems.append(f"step index {step_index}: the probe has heads for {self.step_indices} only")
        return problems

    def check_matches(self, reader: Any, step_index: int | None = None) -> None:
        """Raise :class:`ProbeMismatchError` naming every difference and what to do."""
        problems = self.mismatches(reader, step_index)
        if problems:
            listed = "\n  ".join(problems)
            raise ProbeMismatchError(
                f"the {self.axis} probe{_at(self.path)} was trained for another generator setup:\n  {listed}\n"
                "An h-space probe only reads the generator, layer, scheduler, steps and size it was "
                "trained on. Retrain it for this generator (load_or_train_probe with the same cache "
                "root trains and stores one under its own key) or load the probe trained for it."
            )

    # -- storage ----------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``probe.safetensors`` and ``probe.json`` into ``directory``."""
        from safetensors.numpy import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        save_file({
            "weight": np.ascontiguousarray(self.weight, dtype=np.float32),
            "bias": np.ascontiguousarray(self.bias, dtype=np.float32),
            "mean": np.ascontiguousarray(self.mean, dtype=np.float32),
            "scale": np.ascontiguousarray(self.scale, dtype=np.float32),
        }, str(directory / WEIGHTS_FILE), metadata={"format": "pytest-t2ibias-hspace-probe"})
        (directory / METADATA_FILE).write_text(json.dumps(self.metadata, indent=2) + "\n")
        self.path = directory
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike, reader: Any = None, step_index: int | None = None) -> LinearProbe:
        """Read a saved probe; with ``reader``, refuse it unless it matches that generator."""
        from safetensors.numpy import load_file

        directory = Path(directory)
        metadata_path = directory / METADATA_FILE
        if not metadata_path.is_file() or not (directory / WEIGHTS_FILE).is_file():
            raise BackendError(
                f"{directory} is not an h-space probe: it needs {WEIGHTS_FILE} and {METADATA_FILE} "
                "(written by LinearProbe.save / train_probe)."
            )
        metadata = json.loads(metadata_path.read_text())
        if metadata.get("format_version") != FORMAT_VERSION:
            raise ProbeMismatchError(
                f"the probe at {directory} has format version {metadata.get('format_version')}, "
                f"this plugin reads {FORMAT_VERSION}; retrain it."
            )
        tensors = load_file(str(directory / WEIGHTS_FILE))
        probe = cls(metadata, tensors["weight"], tensors["bias"], tensors["mean"], tensors["scale"], directory)
        if reader is not None:
            probe.check_matches(reader, step_index)
        return probe


# -- training -------------------------------------------------------------------------------


def _fit_logistic(features: np.ndarray, labels: np.ndarray, classes: int, l2: float, max_iter: int):
    """Multinomial logistic regression, L2 on the weights, full-batch L-BFGS (deterministic)."""
    import torch

    x = torch.as_tensor(features, dtype=torch.float64)
    y = torch.as_tensor(labels, dtype=torch.long)
    weight = torch.zeros(classes, x.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ weight.T + bias, y) + l2 * weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return weight.detach().numpy(), bias.detach().numpy()


def train_probe(
    reader: Any,
    axis: str,
    choices: Sequence[str],
    *,
    step_indices: Sequence[int],
    subjects: Sequence[str] = (),
    phrases: dict[str, str] | None = None,
    training: ProbeTraining = ProbeTraining(),
    template: str = PERSON_TEMPLATE,
    subject_template: str = SUBJECT_TEMPLATE,
) -> LinearProbe:
    """Sample every labelled prompt from the same noise seeds, read h at ``step_indices`` and
    fit one head per step; the last seeds (``held_out_fraction``) are held out for accuracy."""
    import time

    started = time.perf_counter()
    pairs = labelled_prompts(choices, subjects, phrases=phrases, template=template, subject_template=subject_template)
    seeds = training.noise_seeds()
    prompts = [p for p, _ in pairs for _ in seeds]
    labels = np.array([label for _, label in pairs for _ in seeds])
    noise = [s for _ in pairs for s in seeds]
    forwards_before = reader.unet_forwards
    features = reader.trajectory_features(prompts, noise, step_indices)  # (images, steps, features)
    held_out = np.isin(noise, seeds[-training.held_out_images():])
    if held_out.all():
        raise ValueError("held_out_fraction leaves no training images; lower it or add images_per_prompt")

    weights, biases, means, scales, accuracy, per_class = [], [], [], [], {}, {}
    for head, index in enumerate(step_indices):
        x = features[:, head].astype(np.float64)
        mean = x[~held_out].mean(axis=0)
        scale = np.maximum(x[~held_out].std(axis=0), 1e-6)
        z = (x - mean) / scale
        weight, bias = _fit_logistic(z[~held_out], labels[~held_out], len(choices), training.l2, training.max_iter)
        predicted = (z[held_out] @ weight.T + bias).argmax(axis=1)
        truth = labels[held_out]
        accuracy[str(index)] = float((predicted == truth).mean())
        per_class[str(index)] = {c: float((predicted[truth == k] == k).mean()) for k, c in enumerate(choices)}
        weights.append(weight)
        biases.append(bias)
        means.append(mean)
        scales.append(scale)

    all_timesteps = reader.timesteps()
    metadata = {
        "format_version": FORMAT_VERSION,
        "axis": axis,
        "classes": list(choices),
        "step_indices": [int(i) for i in step_indices],
        "timesteps": [all_timesteps[int(i)] for i in step_indices],
        "feature_size": int(features.shape[-1]),
        "generator": json.loads(json.dumps(reader.describe())),
        "training": {
            "prompts": [{"prompt": p, "label": choices[label]} for p, label in pairs],
            "images_per_prompt": training.images_per_prompt,
            "noise_seeds": seeds,
            "train_images": int((~held_out).sum()),
            "held_out_images": int(held_out.sum()),
            "images_per_class": {c: int((labels == k).sum()) for k, c in enumerate(choices)},
            "held_out_fraction": training.held_out_fraction,
            "seed": training.seed,
            "l2": training.l2,
            "max_iter": training.max_iter,
            "unet_forwards": reader.unet_forwards - forwards_before,
            "wall_s": round(time.perf_counter() - started, 2),
        },
        "held_out_accuracy": accuracy,
        "held_out_accuracy_per_class": per_class,
    }
    return LinearProbe(metadata, np.stack(weights).astype(np.float32), np.stack(biases).astype(np.float32),
                       np.stack(means).astype(np.float32), np.stack(scales).astype(np.float32))


# -- content-addressed storage ------------------------------------------------------------


def probe_key(
    reader: Any,
    axis: str,
    choices: Sequence[str],
    *,
    step_indices: Sequence[int],
    subjects: Sequence[str] = (),
    phrases: dict[str, str] | None = None,
    training: ProbeTraining = ProbeTraining(),
    template: str = PERSON_TEMPLATE,
    subject_template: str = SUBJECT_TEMPLATE,
) -> str:
    """sha256 of everything the probe's weights depend on (generator, prompts, steps, training)."""
    identity = {
        "format_version": FORMAT_VERSION,
        "generator": reader.describe(),
        "axis": axis,
        "classes": list(choices),
        "prompts": labelled_prompts(choices, subjects, phrases=phrases, template=template,
                                    subject_template=subject_template),
        "step_indices": [int(i) for i in step_indices],
        "training": asdict(training),
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def probe_directory(cache_root: str | os.PathLike, reader: Any, axis: str, choices: Sequence[str], **settings) -> Path:
    """``<cache_root>/probes/<axis>-<key>``: one directory per (generator, axis, prompts, steps, training)."""
    return Path(cache_root) / "probes" / f"{axis}-{probe_key(reader, axis, choices, **settings)[:20]}"


def load_or_train_probe(
    cache_root: str | os.PathLike, reader: Any, axis: str, choices: Sequence[str], **settings
) -> LinearProbe:
    """The stored probe for these settings, or train, store (atomically) and return it."""
    directory = probe_directory(cache_root, reader, axis, choices, **settings)
    if (directory / METADATA_FILE).is_file():
        return LinearProbe.load(directory, reader)
    probe = train_probe(reader, axis, choices, **settings)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    probe.save(staging)
    try:
        os.replace(staging, directory)
    except OSError:  # another process stored it first: theirs is the same probe
        shutil.rmtree(staging, ignore_errors=True)
    probe.path = directory
    return probe


# -- BGPS scoring ---------------------------------------------------------------------------


class HSpaceProbeScorer:
    """BGPS' p_clf term: prompts -> (1/K) sum_k p_probe(target | h_t(x, z_k)) (inside Eq. 4's log).

    The K latents are denoised once under ``neutral_prompt`` up to ``step_index``; each
    candidate then costs K conditional UNet forwards (batched), stopped at the mid-block.
    """

    def __init__(
        self,
        reader: Any,
        probe: LinearProbe,
        target: str,
        *,
        step_index: int,
        latents: int = 10,
        neutral_prompt: str = "a photo of a person",
        noise_seeds: Sequence[int] | None = None,
    ) -> None:
        probe.check_matches(reader, step_index)
        if target not in probe.classes:
            raise ValueError(f"target {target!r} is not one of the {probe.axis} probe's classes {probe.classes}")
        self.reader = reader
        self.probe = probe
        self.target = target
        self.step_index = int(step_index)
        self.neutral_prompt = neutral_prompt
        # Away from the probe's training seeds (seed * 100_000 + j), so it never saw these latents.
        self.noise_seeds = list(noise_seeds) if noise_seeds is not None else [90_000 + k for k in range(latents)]
        self._neutral = None
        self._target_column = probe.classes.index(target)
        self.unet_forwards = 0
        """UNet evaluations spent (K per candidate, plus the neutral denoising's)."""

    def neutral(self):
        if self._neutral is None:
            before = self.reader.unet_evaluations
            self._neutral = self.reader.neutral_latents(self.neutral_prompt, self.noise_seeds, self.step_index)
            self.unet_forwards += self.reader.unet_evaluations - before
        return self._neutral

    def per_latent(self, prompts: Sequence[str]) -> np.ndarray:
        """p(target | h_t(x, z_k)) for every prompt and latent: (prompts, K)."""
        neutral = self.neutral()
        before = self.reader.unet_evaluations
        features = self.reader.candidate_features(list(prompts), neutral)
        self.unet_forwards += self.reader.unet_evaluations - before
        return self.probe.probabilities(features, self.step_index)[..., self._target_column]

    def __call__(self, prompts: Sequence[str]) -> np.ndarray:
        if not prompts:
            return np.empty(0)
        return self.per_latent(prompts).mean(axis=1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(axis={self.probe.axis!r}, target={self.target!r}, "
                f"step_index={self.step_index}, K={len(self.noise_seeds)})")


def _at(path: Path | None) -> str:
    return f" at {path}" if path else ""


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."
