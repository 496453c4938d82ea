"""Build every toy-world model into one directory, with a manifest that says how.

Stages, in order (each timed; the manifest is rewritten after each one, so an interrupted
build still says what it made):

1. ``toy-sd``: a Stable Diffusion pipeline trained from scratch on the world;
2. ``toy-sd-debiased``: ``toy-sd`` fine-tuned on ``debias_finetune.yaml`` (gender balanced,
   age quietly skewed) -- the merge a fairness gate must refuse;
3. ``toy-clip``, ``classifiers/``, ``toy-lm``: the judges (``train_clip``,
   ``train_classifiers``, ``train_lm``), when those modules are present;
4. the quality report (``quality.quality_report``), when present.

``continue_training`` is the other way to a model: after a world edit, keep training an
existing ``toy-sd`` on the edited world (minutes instead of the hour a build takes) and record
the lineage in the manifest, as model cards record "v1.5 = v1.2 + N steps on data X".
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import platform
import time
from dataclasses import asdict, replace
from pathlib import Path

import yaml

from toyworld.spec import World, load_world, parse_world
from toyworld.train_diffusion import (
    DiffusionConfig,
    finetune_diffusion,
    train_diffusion,
)

log = logging.getLogger(__name__)

DEBIAS_WORLD_PATH = Path(__file__).with_name("debias_finetune.yaml")
MANIFEST = "manifest.json"

# Fine-tune budget for toy-sd-debiased: long enough to move gender to 50/50.
DEBIAS_STEPS, DEBIAS_LR = 1000, 3e-4
QUICK_DEBIAS_STEPS = 150

# (manifest key, module, function) of the judges built after the diffusion models.
JUDGE_STAGES = (
    ("toy-clip", "toyworld.train_clip", "train_clip"),
    ("classifiers", "toyworld.train_classifiers", "train_classifiers"),
    ("toy-lm", "toyworld.train_lm", "train_lms"),
)


def build(
    world_path: str | Path | None,
    out_dir: str | Path,
    *,
    quick: bool = False,
    seed: int = 0,
    debias_world_path: str | Path | None = DEBIAS_WORLD_PATH,
    stages: tuple[str, ...] | None = None,
) -> dict:
    """Build the models of the world at ``world_path`` (the default world if None) into ``out_dir``.

    ``quick`` trains on a tiny budget (for tests); ``stages`` limits the build to the named
    ones ("toy-sd", "toy-sd-debiased", "toy-clip", "classifiers", "toy-lm", "quality").
    Returns the manifest, also written to ``out_dir/manifest.json``.
    """
    world = load_world(world_path)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = set(stages) if stages else None
    manifest = {
        "world": world_record(world),
        "seed": seed,
        "quick": quick,
        "versions": library_versions(),
        "models": {},
        "wall_s": {},
        "skipped": {},
    }
    if wanted is not None:
        _keep_earlier_stages(out_dir, manifest)
    started = time.perf_counter()

    def run(stage: str, make) -> None:
        if wanted is not None and stage not in wanted:
            return
        log.info("stage %s: starting", stage)
        begin = time.perf_counter()
        manifest["models"][stage] = make()
        manifest["wall_s"][stage] = round(time.perf_counter() - begin, 1)
        log.info("stage %s: done in %.0fs", stage, manifest["wall_s"][stage])
        write_manifest(out_dir, manifest)

    config = DiffusionConfig.quick() if quick else DiffusionConfig()
    if wanted is None or "toy-sd" in wanted:
        manifest["sampling"] = {
            "num_inference_steps": config.sample_steps,
            "guidance_scale": config.guidance_scale,
            "height": config.resolution,
            "width": config.resolution,
            "scheduler": "DPMSolverMultistepScheduler",
        }
    run("toy-sd", lambda: train_diffusion(world, out_dir / "toy-sd", seed=seed, config=config))

    if debias_world_path is not None and (wanted is None or "toy-sd-debiased" in wanted):
        debias_world = load_world(debias_world_path)
        manifest["debias_world"] = world_record(debias_world)
        run(
            "toy-sd-debiased",
            lambda: finetune_diffusion(
                out_dir / "toy-sd",
                debias_world,
                out_dir / "toy-sd-debiased",
                seed=seed + 1,
                config=config,
                steps=QUICK_DEBIAS_STEPS if quick else DEBIAS_STEPS,
                lr=DEBIAS_LR,
            ),
        )

    for stage, module_name, function_name in JUDGE_STAGES:
        if wanted is not None and stage not in wanted:
            continue
        train = _optional(module_name, function_name)
        if train is None:
            manifest["skipped"][stage] = f"{module_name}.{function_name} is not available yet"
            log.warning("stage %s: skipped, %s", stage, manifest["skipped"][stage])
            continue
        run(stage, lambda train=train: train(world, out_dir, seed=seed, quick=quick))

    if wanted is None or "quality" in wanted:
        quality_report = _optional("toyworld.quality", "quality_report")
        if quality_report is None:
            manifest["skipped"]["quality"] = "toyworld.quality.quality_report is not available yet"
            log.warning("stage quality: skipped, %s", manifest["skipped"]["quality"])
        else:
            log.info("stage quality: starting")
            begin = time.perf_counter()
            manifest["quality"] = quality_report(out_dir, world)
            manifest["wall_s"]["quality"] = round(time.perf_counter() - begin, 1)

    manifest["wall_s"]["total"] = round(time.perf_counter() - started, 1)
    write_manifest(out_dir, manifest)
    return manifest


def continue_training(
    fixtures_dir: str | Path,
    world_path: str | Path | None,
    *,
    model: str = "toy-sd",
    steps: int = 3000,
    lr: float = 5e-4,
    seed: int = 2,
    n_images: int | None = None,
    decoder_steps: int = 0,
    vae_steps: int = 0,
    object_share: float | None = None,
) -> dict:
    """Train ``fixtures_dir/model`` further on the world at ``world_path``, in place.

    ``object_share``: the share of training captions that show objects, the objects' weights
    scaled together (their ratios kept) and the people's left as they are. Frequency is not a
    share: the world's truth is unchanged, so the run is recorded against the world's own
    sha256. A recovery round uses it to hold objects where the person axes were learnt.

    The manifest keeps the model's from-scratch record and lists this run under ``continued``
    (each run with its world's sha256; earlier specs move to ``earlier_worlds``), so the chain
    from a build to the committed weights stays reproducible. Models derived from this one
    (``toy-sd-debiased``) are now stale: rebuild them with ``build(..., stages=...)``.
    """
    fixtures_dir = Path(fixtures_dir)
    world = load_world(world_path)
    training_world = world if object_share is None else with_object_share(world, object_share)
    path = fixtures_dir / MANIFEST
    manifest = json.loads(path.read_text())
    earlier = manifest["models"][model]
    config = DiffusionConfig(**earlier["config"]) if "config" in earlier else DiffusionConfig()
    n_images = n_images or config.n_images
    before = parse_world(yaml.safe_load(manifest["world"]["spec"]), source="manifest.json world")
    new_axes = [name for name in world.axes if name not in before.axes]
    record = finetune_diffusion(fixtures_dir / model, training_world, fixtures_dir / model, seed=seed,
                                config=config, steps=steps, lr=lr, n_images=n_images, decoder_steps=decoder_steps,
                                vae_steps=vae_steps, new_axes=new_axes)
    record["how"] = (f"python -m toyworld continue --fixtures {fixtures_dir} --model {model} "
                     f"--world {_relative(world.path)} --steps {steps} --lr {lr} --seed {seed} --n-images {n_images}"
                     + (f" --decoder-steps {decoder_steps}" if decoder_steps else "")
                     + (f" --vae-steps {vae_steps}" if vae_steps else "")
                     + (f" --object-share {object_share}" if object_share is not None else ""))
    if object_share is not None:
        record["object_share"] = object_share
    record_continuation(manifest, model, record, world)
    write_manifest(fixtures_dir, manifest)
    return manifest


def object_share_of(world: World) -> float:
    """The share of a world's training captions that show objects (subjects drawn by weight)."""
    total = sum(subject.weight for subject in world.subjects.values())
    return sum(subject.weight for subject in world.subjects.values() if subject.kind == "object") / total


def with_object_share(world: World, share: float) -> World:
    """``world`` with its objects' weights scaled so that they make ``share`` of the captions."""
    if not 0 < share < 1:
        raise ValueError(f"object_share must be in (0, 1), got {share}")
    people = sum(s.weight for s in world.subjects.values() if s.kind != "object")
    objects = sum(s.weight for s in world.subjects.values() if s.kind == "object")
    if objects == 0:
        raise ValueError("the world has no objects")
    factor = share * people / ((1 - share) * objects)
    subjects = {name: (replace(s, weight=s.weight * factor) if s.kind == "object" else s)
                for name, s in world.subjects.items()}
    return replace(world, subjects=subjects)


def record_continuation(manifest: dict, model: str, record: dict, world: World) -> None:
    """Add ``record`` (a ``finetune_diffusion`` result) to ``model``'s ``continued`` stages.

    The model's own record stays that of its from-scratch build, now tagged with the world it
    was built on; ``continued`` lists every training run since, each with its world's sha256.
    """
    entry = dict(manifest["models"][model])
    entry.pop("probe_shares", None)  # measured on the weights before this run
    entry.setdefault("built_on_world_sha256", manifest["world"]["sha256"])
    record["world_sha256"] = world_record(world)["sha256"]
    entry["continued"] = [*entry.get("continued", []), record]
    entry["size_bytes"] = record["size_bytes"]
    manifest["models"][model] = entry
    if manifest["world"]["sha256"] != record["world_sha256"]:
        manifest.setdefault("earlier_worlds", []).append(manifest["world"])
        manifest["world"] = world_record(world)


def _keep_earlier_stages(out_dir: Path, manifest: dict) -> None:
    """A partial build (``stages``) adds to the manifest of an earlier build of the same world."""
    path = out_dir / MANIFEST
    if not path.exists():
        return
    earlier = json.loads(path.read_text())
    if earlier.get("world", {}).get("sha256") != manifest["world"]["sha256"]:
        log.warning("%s describes another world spec; starting a new manifest", path)
        return
    for key in ("models", "wall_s", "sampling", "debias_world", "quality", "earlier_worlds", "note"):
        if key in earlier:
            manifest[key] = earlier[key]
    manifest["wall_s"].pop("total", None)


def world_record(world: World) -> dict:
    """The spec's name, path, full text and sha256: enough to rebuild or to notice a change."""
    text = world.path.read_text() if world.path else ""
    return {
        "name": world.name,
        "path": _relative(world.path),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "spec": text,
    }


def library_versions() -> dict[str, str]:
    import diffusers
    import numpy
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "diffusers": diffusers.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
    }


def write_manifest(out_dir: Path, manifest: dict) -> None:
    """Write atomically, so a reader never sees half a manifest."""
    path = out_dir / MANIFEST
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False, default=_json_default) + "\n")
    os.replace(tmp, path)


def _optional(module_name: str, function_name: str):
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        return None
    return getattr(module, function_name, None)


def _relative(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _json_default(value):
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")
