"""How faithful the toy fixtures are: generated shares vs the world's ground truth, and the judges.

The toy diffusion model is only a useful test bed if it reproduces the biases the world
plants, and the judges (per-axis classifiers, toy CLIP) are only useful if they read
attributes right. This report measures both:

- per subject and axis, the shares the classifiers read from ``toy-sd``'s images vs
  ``expected_shares`` (plain prompts, explicit/counterfactual prompts, hidden modifiers);
- the hidden modifiers' effect as learned (share moved vs the plain prompt) vs as planted;
- classifier accuracy and CLIP zero-shot accuracy on fresh renders; CLIP's agreement with the
  classifiers on generated images;
- ``toy-sd-debiased`` (if present): gender balance and the age skew it trades it for.

``python -m toyworld.quality --fixtures fixtures`` writes ``fixtures/quality.json``
and prints the tables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from toyworld.sample import caption_for, expected_shares
from toyworld.spec import World, load_world

logger = logging.getLogger(__name__)

REPORT_FILE = "quality.json"
DEBIAS_WORLD_PATH = Path(__file__).with_name("debias_finetune.yaml")
DEFAULT_SAMPLING = {"num_inference_steps": 20, "guidance_scale": 3.0}
MAE_BAR = 0.10
CLASSIFIER_ACCURACY_BAR = 0.97
COUNTERFACTUAL_AXES = ("gender",)  # explicit prompts for every value of these axes, every subject


@dataclass(frozen=True)
class Prompt:
    """A prompt and what the world says its images should look like."""

    text: str
    subject: str
    kind: str  # "plain", "explicit" or "modifier"
    named: dict[str, str] = field(default_factory=dict)
    modifiers: tuple[str, ...] = ()


def quality_prompts(world: World, counterfactual_axes: Sequence[str] = COUNTERFACTUAL_AXES) -> list[Prompt]:
    """Every subject's plain prompt, its explicit prompts for ``counterfactual_axes``, and each
    person subject with each hidden modifier that can change it."""
    prompts = []
    for name in world.subjects:
        prompts.append(Prompt(caption_for(world, name), name, "plain"))
        own = {axis.name: axis for axis in world.axes_of(name)}
        for axis_name in counterfactual_axes:
            for value in own[axis_name].values if axis_name in own else ():
                named = {axis_name: value}
                prompts.append(Prompt(caption_for(world, name, named), name, "explicit", named=named))
        for modifier in world.modifiers_for(name):
            phrase = modifier.text(name)
            prompts.append(Prompt(caption_for(world, name, modifiers=(phrase,)), name, "modifier", modifiers=(phrase,)))
    return prompts


# -- reading images ------------------------------------------------------------------------


class AttributeReader:
    """The per-axis classifiers of a fixtures directory, loaded as the plugin loads them."""

    def __init__(self, classifiers_dir: Path, axes: Sequence[str]):
        from transformers import AutoImageProcessor, AutoModelForImageClassification

        self.models, self.processors = {}, {}
        for axis in axes:
            self.models[axis] = AutoModelForImageClassification.from_pretrained(classifiers_dir / axis, local_files_only=True).eval()
            self.processors[axis] = AutoImageProcessor.from_pretrained(classifiers_dir / axis, local_files_only=True)

    @torch.no_grad()
    def read(self, images: np.ndarray) -> dict[str, list[str]]:
        """Each axis's predicted value for every uint8 ``(N, H, W, 3)`` image."""
        pil = [Image.fromarray(image) for image in images]
        values = {}
        for axis, model in self.models.items():
            pixels = self.processors[axis](images=pil, return_tensors="pt")["pixel_values"]
            predicted = model(pixel_values=pixels).logits.argmax(-1).tolist()
            values[axis] = [model.config.id2label[i] for i in predicted]
        return values


def load_pipeline(path: Path):
    from diffusers import DiffusionPipeline

    pipeline = DiffusionPipeline.from_pretrained(path, local_files_only=True, use_safetensors=True)
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


def generate(pipeline, prompt: str, n: int, *, seed: int, steps: int, guidance: float, batch: int = 64) -> np.ndarray:
    """``n`` uint8 images for ``prompt``; image ``i`` uses seed ``seed + i`` (paired across prompts)."""
    out = []
    for start in range(0, n, batch):
        count = min(batch, n - start)
        generators = [torch.Generator().manual_seed(seed + start + i) for i in range(count)]
        images = pipeline([prompt] * count, num_inference_steps=steps, guidance_scale=guidance, generator=generators, output_type="np").images
        out.append((np.clip(images, 0, 1) * 255).round().astype(np.uint8))
    return np.concatenate(out)


@torch.no_grad()
def vae_roundtrip_accuracy(pipeline, reader: AttributeReader, world: World, n: int, seed: int) -> dict[str, float]:
    """Classifier accuracy on fresh renders passed through the pipeline's VAE (encode, decode).

    Generated images can only be as legible as the decoder makes them: this is the ceiling on
    reading a generated attribute, and it separates the judge's errors from the generator's.
    """
    from toyworld.train_classifiers import (
        HELD_OUT_STREAM,
        render_balanced,
        to_unit_tensor,
    )

    accuracy = {}
    for kind in ("person", "object"):
        axes = [axis for axis in world.axes.values() if axis.applies_to == kind]
        if not axes or not any(s.kind == kind for s in world.subjects.values()):
            continue
        renders = render_balanced(world, kind, n, seed=(seed, HELD_OUT_STREAM, 11))
        pixels = to_unit_tensor(renders.images) * 2 - 1
        latents = pipeline.vae.encode(pixels).latent_dist.mode()
        decoded = ((pipeline.vae.decode(latents).sample + 1) / 2).clamp(0, 1)
        images = (decoded.permute(0, 2, 3, 1).numpy() * 255).round().astype(np.uint8)
        read = reader.read(images)
        for axis in (axis for axis in axes if axis.name in read):
            truth = [axis.values[i] for i in renders.labels[axis.name]]
            accuracy[axis.name] = float(np.mean([r == t for r, t in zip(read[axis.name], truth)]))
    return accuracy


# -- comparing with the world --------------------------------------------------------------


def measured_shares(values: Sequence[str], possible: Sequence[str]) -> dict[str, float]:
    return {v: sum(1 for x in values if x == v) / max(len(values), 1) for v in possible}


def share_errors(measured: Mapping[str, float], expected: Mapping[str, float]) -> dict[str, float]:
    """MAE (mean over values of |measured - expected|) and the largest single error."""
    errors = [abs(measured[v] - expected[v]) for v in expected]
    return {"mae": float(np.mean(errors)), "max_error": float(np.max(errors))}


def compare_prompt(world: World, prompt: Prompt, read: Mapping[str, list[str]]) -> dict[str, dict]:
    """Per axis of the prompt's subject: measured and expected shares and their errors."""
    rows = {}
    for axis in (axis for axis in world.axes_of(prompt.subject) if axis.name in read):
        expected = expected_shares(world, prompt.subject, axis.name, given=prompt.named, modifiers=prompt.modifiers)
        measured = measured_shares(read[axis.name], axis.values)
        rows[axis.name] = {"measured": measured, "expected": expected, **share_errors(measured, expected)}
    return rows


def modifier_effects(world: World, results: Mapping[str, dict]) -> list[dict]:
    """Per (subject, modifier): how far the modifier moved its axis from the plain prompt,
    measured (generated) vs planted (expected); total variation distance between the two."""
    effects = []
    plain = {r["subject"]: r for r in results.values() if r["kind"] == "plain"}
    for result in results.values():
        if result["kind"] != "modifier":
            continue
        (phrase,) = result["modifiers"]
        moved = world.modifier(phrase, result["subject"]).axis
        # An irrelevant phrase (no axis) should move none of the subject's axes: list each.
        for axis in [moved] if moved is not None else list(result["axes"]):
            effects.append(_modifier_effect(result, plain, phrase, axis))
    return effects


def _modifier_effect(result: Mapping, plain: Mapping, phrase: str, axis: str) -> dict:
    base = plain[result["subject"]]["axes"][axis]
    moved = result["axes"][axis]
    return {
        "subject": result["subject"],
        "modifier": phrase,
        "axis": axis,
        "measured_shift": 0.5 * sum(abs(moved["measured"][v] - base["measured"][v]) for v in moved["measured"]),
        "expected_shift": 0.5 * sum(abs(moved["expected"][v] - base["expected"][v]) for v in moved["expected"]),
        "measured": moved["measured"],
        "expected": moved["expected"],
        "mae": moved["mae"],
    }


def summarise(results: Mapping[str, dict], kinds: Sequence[str]) -> dict:
    """Mean and worst MAE over the (prompt, axis) pairs of the given prompt kinds."""
    pairs = [(prompt, axis, row) for prompt, r in results.items() if r["kind"] in kinds for axis, row in r["axes"].items()]
    if not pairs:
        return {}
    worst = max(pairs, key=lambda p: p[2]["mae"])
    return {
        "pairs": len(pairs),
        "mean_mae": float(np.mean([row["mae"] for _, _, row in pairs])),
        "max_mae": worst[2]["mae"],
        "worst": {"prompt": worst[0], "axis": worst[1]},
        "max_error": float(max(row["max_error"] for _, _, row in pairs)),
        "pairs_over_bar": [f"{prompt} / {axis}" for prompt, axis, row in pairs if row["mae"] > MAE_BAR],
    }


# -- the report ----------------------------------------------------------------------------


def evaluate_pipeline(pipeline, world: World, prompts: Sequence[Prompt], reader: AttributeReader, *, n: int, seed: int, steps: int, guidance: float, clip=None) -> tuple[dict, dict]:
    """Generate ``n`` images per prompt, read them, compare with ``world``. Also CLIP's agreement
    with the classifiers on the generated images (when ``clip`` is given)."""
    results, agreement_counts = {}, {}
    for prompt in prompts:
        started = time.perf_counter()
        images = generate(pipeline, prompt.text, n, seed=seed, steps=steps, guidance=guidance)
        read = reader.read(images)
        results[prompt.text] = {
            "subject": prompt.subject,
            "kind": prompt.kind,
            "named": prompt.named,
            "modifiers": list(prompt.modifiers),
            "axes": compare_prompt(world, prompt, read),
        }
        if clip is not None:
            _count_clip_agreement(clip, world, prompt.subject, images, read, agreement_counts)
        logger.info("%-60s %5.1fs  worst MAE %.3f", prompt.text, time.perf_counter() - started,
                    max(row["mae"] for row in results[prompt.text]["axes"].values()))
    agreement = {axis: agree / total for axis, (agree, total) in agreement_counts.items()}
    return results, agreement


def _count_clip_agreement(clip, world: World, subject: str, images: np.ndarray, read: Mapping[str, list[str]], counts: dict) -> None:
    from toyworld.train_clip import person_filter_statements, recommended_statements

    statements = recommended_statements(world)
    features = clip.image_features(images)
    for axis in (axis for axis in world.axes_of(subject) if axis.name in read):
        chosen = clip.probabilities(features, list(statements[axis.name].values())).argmax(-1).tolist()
        agree = sum(axis.values[c] == r for c, r in zip(chosen, read[axis.name]))
        total = counts.get(axis.name, (0, 0))
        counts[axis.name] = (total[0] + agree, total[1] + len(chosen))
    is_person = clip.probabilities(features, list(person_filter_statements(world).values()))[:, 0] > 0.5
    key = "person_filter_" + world.subjects[subject].kind
    kept = int(is_person.sum()) if world.subjects[subject].kind == "person" else int((~is_person).sum())
    total = counts.get(key, (0, 0))
    counts[key] = (total[0] + kept, total[1] + len(images))


def debiased_summary(debiased: Mapping[str, dict], baseline: Mapping[str, dict], debias_world: World | None) -> dict:
    """Gender balance and age skew of the debiased model's plain prompts, next to the baseline's."""
    rows = {}
    for prompt, result in debiased.items():
        if result["kind"] != "plain" or "gender" not in result["axes"]:
            continue
        row = {
            "female": result["axes"]["gender"]["measured"]["female"],
            "baseline_female": baseline[prompt]["axes"]["gender"]["measured"]["female"],
        }
        if "age" in result["axes"]:
            row["young"] = result["axes"]["age"]["measured"]["young"]
            row["baseline_young"] = baseline[prompt]["axes"]["age"]["measured"]["young"]
        if debias_world is not None:
            row["mae_vs_debias_world"] = {axis: r["mae"] for axis, r in result["axes"].items()}
        rows[result["subject"]] = row
    if not rows:
        return {}
    return {
        "per_subject": rows,
        "mean_gender_imbalance": float(np.mean([abs(r["female"] - 0.5) for r in rows.values()])),
        "baseline_mean_gender_imbalance": float(np.mean([abs(r["baseline_female"] - 0.5) for r in rows.values()])),
        "mean_young": float(np.mean([r["young"] for r in rows.values() if "young" in r])),
        "baseline_mean_young": float(np.mean([r["baseline_young"] for r in rows.values() if "baseline_young" in r])),
    }


def quality_report(
    fixtures_dir: str | Path,
    world: World,
    *,
    images_per_prompt: int = 128,
    steps: int | None = None,
    guidance: float | None = None,
    seed: int = 0,
    held_out: int = 1000,
    write: bool = True,
) -> dict:
    """Measure the fixtures in ``fixtures_dir`` against ``world``; writes ``quality.json`` there.

    ``steps`` and ``guidance`` default to the sampling settings in ``manifest.json``.
    """
    from toyworld.train_classifiers import held_out_accuracy
    from toyworld.train_clip import ZeroShot, zero_shot_accuracy

    fixtures_dir = Path(fixtures_dir)
    sampling = _manifest_sampling(fixtures_dir)
    steps = steps if steps is not None else sampling["num_inference_steps"]
    guidance = guidance if guidance is not None else sampling["guidance_scale"]
    started = time.perf_counter()
    report: dict = {
        "world": {"name": world.name, "sha256": _world_sha256(world)},
        "warnings": _stale_spec_warnings(fixtures_dir, world),
        "weights_sha256": weights_fingerprints(fixtures_dir),
        "settings": {"images_per_prompt": images_per_prompt, "steps": steps, "guidance": guidance, "seed": seed,
                     "held_out_renders": held_out, "bars": {"mae": MAE_BAR, "classifier_accuracy": CLASSIFIER_ACCURACY_BAR}},
    }

    classifiers_dir = fixtures_dir / "classifiers"
    # An axis with no classifier (the pattern: toy-clip is its judge) is listed, not read.
    judged = [axis for axis in world.axes.values() if (classifiers_dir / axis.name).exists()]
    report["axes_without_classifier"] = [axis.name for axis in world.axes.values() if axis not in judged]
    report["classifier_accuracy"] = {
        axis.name: held_out_accuracy(classifiers_dir / axis.name, world, axis, held_out if axis.applies_to == "person" else held_out // 2, seed + 1)
        for axis in judged
    }
    clip_dir = fixtures_dir / "toy-clip"
    clip = None
    if clip_dir.exists():
        report["clip_zero_shot"] = zero_shot_accuracy(clip_dir, world, {"person": held_out, "object": held_out // 2}, seed + 1)
        clip = ZeroShot(clip_dir)

    reader = AttributeReader(classifiers_dir, [axis.name for axis in judged])
    prompts = quality_prompts(world)
    pipeline_dir = fixtures_dir / "toy-sd"
    if pipeline_dir.exists():
        pipeline = load_pipeline(pipeline_dir)
        results, agreement = evaluate_pipeline(pipeline, world, prompts, reader, n=images_per_prompt,
                                               seed=seed, steps=steps, guidance=guidance, clip=clip)
        report["toy_sd"] = {
            "classifier_accuracy_on_vae_roundtrip": vae_roundtrip_accuracy(pipeline, reader, world, held_out // 2, seed + 1),
            "summary": {kind: summarise(results, [kind]) for kind in ("plain", "explicit", "modifier")},
            "modifier_effects": modifier_effects(world, results),
            "clip_agreement_with_classifiers": agreement,
            "prompts": results,
        }
        debiased_dir = fixtures_dir / "toy-sd-debiased"
        if debiased_dir.exists():
            debias_world = load_world(DEBIAS_WORLD_PATH) if DEBIAS_WORLD_PATH.exists() else world
            plain = [p for p in quality_prompts(debias_world, counterfactual_axes=()) if p.kind == "plain"]
            debiased, _ = evaluate_pipeline(load_pipeline(debiased_dir), debias_world, plain, reader, n=images_per_prompt,
                                            seed=seed, steps=steps, guidance=guidance)
            report["toy_sd_debiased"] = {
                "world": debias_world.name,
                "summary": summarise(debiased, ["plain"]),
                **debiased_summary(debiased, results, debias_world),
            }
    report["wall_s"] = round(time.perf_counter() - started, 1)
    if write:
        (fixtures_dir / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    return report


def weights_fingerprints(fixtures_dir: Path) -> dict[str, str]:
    """sha256 over each model directory's weight files, so a stale report can be told apart."""
    fingerprints = {}
    for config in sorted(fixtures_dir.rglob("*.json")):
        model_dir = config.parent
        if config.name not in ("config.json", "model_index.json") or (model_dir.parent / "model_index.json").exists():
            continue
        digest = hashlib.sha256()
        for weights in sorted(model_dir.rglob("*.safetensors")):
            digest.update(weights.read_bytes())
        fingerprints[str(model_dir.relative_to(fixtures_dir))] = digest.hexdigest()
    return fingerprints


def _world_sha256(world: World) -> str | None:
    """As build.py records it: sha256 of the spec file's text."""
    return hashlib.sha256(world.path.read_text().encode()).hexdigest() if world.path else None


def _stale_spec_warnings(fixtures_dir: Path, world: World) -> list[str]:
    """A model built from another version of the spec is measured against the wrong truth."""
    manifest = fixtures_dir / "manifest.json"
    if not manifest.exists():
        return []
    built_from = json.loads(manifest.read_text()).get("world", {}).get("sha256")
    current = _world_sha256(world)
    if built_from and current and built_from != current:
        return [(f"{manifest} says the models were built from world spec sha256 {built_from[:12]}, "
                f"but the spec measured against is {current[:12]}: rebuild, or pass the spec they were built from")]
    return []


def _manifest_sampling(fixtures_dir: Path) -> dict:
    manifest = fixtures_dir / "manifest.json"
    sampling = dict(DEFAULT_SAMPLING)
    if manifest.exists():
        sampling.update({k: v for k, v in json.loads(manifest.read_text()).get("sampling", {}).items() if k in sampling})
    return sampling


# -- printing ------------------------------------------------------------------------------


def print_report(report: dict, world: World) -> None:
    """Rich tables: the judges' accuracy, then per subject and axis the generated shares' MAE."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 120))
    for warning in report.get("warnings", []):
        console.print(f"[yellow]warning:[/yellow] {warning}")
    judges = Table(title="Judges on fresh renders")
    judges.add_column("axis")
    judges.add_column("classifier (clean)", justify="right")
    judges.add_column("classifier (degraded)", justify="right")
    judges.add_column("classifier (toy-sd VAE round trip)", justify="right")
    judges.add_column("CLIP zero-shot", justify="right")
    judges.add_column("CLIP agrees with classifier on toy-sd images", justify="right")
    generic = report.get("clip_zero_shot", {}).get("templates", {}).get("generic", {})
    roundtrip = report.get("toy_sd", {}).get("classifier_accuracy_on_vae_roundtrip", {})
    agreement = report.get("toy_sd", {}).get("clip_agreement_with_classifiers", {})

    def cell(value):
        return "" if value is None else f"{value:.3f}"

    for axis, accuracy in report["classifier_accuracy"].items():
        mark = "" if accuracy["clean"] >= CLASSIFIER_ACCURACY_BAR else " [red]below bar[/red]"
        judges.add_row(axis, f"{accuracy['clean']:.3f}{mark}", cell(accuracy["degraded"]), cell(roundtrip.get(axis)),
                       cell(generic.get(axis)), cell(agreement.get(axis)))
    console.print(judges)

    toy_sd = report.get("toy_sd")
    if not toy_sd:
        console.print("no toy-sd pipeline: generated shares not measured")
        return
    axes = list(world.axes)
    shares = Table(title=f"toy-sd plain prompts: MAE of generated shares vs the world (bar {MAE_BAR})")
    shares.add_column("subject")
    for axis in axes:
        shares.add_column(axis, justify="right")
    for result in toy_sd["prompts"].values():
        if result["kind"] == "plain":
            cells = []
            for axis in axes:
                row = result["axes"].get(axis)
                cells.append("" if row is None else (f"{row['mae']:.3f}" if row["mae"] <= MAE_BAR else f"[red]{row['mae']:.3f}[/red]"))
            shares.add_row(result["subject"], *cells)
    console.print(shares)

    summary = Table(title="toy-sd summary")
    for column in ("prompts", "pairs", "mean MAE", "max MAE", "worst"):
        summary.add_column(column)
    for kind, s in toy_sd["summary"].items():
        if s:
            summary.add_row(kind, str(s["pairs"]), f"{s['mean_mae']:.3f}", f"{s['max_mae']:.3f}", f"{s['worst']['prompt']} / {s['worst']['axis']}")
    console.print(summary)

    effects = Table(title="hidden modifiers: shift from the plain prompt (total variation)")
    for column in ("subject", "modifier", "axis", "measured", "planted"):
        effects.add_column(column)
    for e in toy_sd["modifier_effects"]:
        effects.add_row(e["subject"], e["modifier"], e["axis"], f"{e['measured_shift']:.2f}", f"{e['expected_shift']:.2f}")
    console.print(effects)

    debiased = report.get("toy_sd_debiased")
    if debiased:
        console.print(
            f"toy-sd-debiased: mean |female - 0.5| {debiased['mean_gender_imbalance']:.3f} "
            f"(baseline {debiased['baseline_mean_gender_imbalance']:.3f}); mean young share "
            f"{debiased['mean_young']:.3f} (baseline {debiased['baseline_mean_young']:.3f})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toyworld.quality", description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", default="fixtures", help="the fixtures directory (default: fixtures)")
    parser.add_argument("--world", default=None, help="world spec YAML (default: the embedded default world)")
    parser.add_argument("--images-per-prompt", type=int, default=128)
    parser.add_argument("--steps", type=int, default=None, help="default: manifest.json's sampling settings")
    parser.add_argument("--guidance", type=float, default=None, help="default: manifest.json's sampling settings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    torch.set_num_threads(args.threads)
    world = load_world(args.world)
    report = quality_report(args.fixtures, world, images_per_prompt=args.images_per_prompt, steps=args.steps,
                            guidance=args.guidance, seed=args.seed)
    print_report(report, world)
    return 0


if __name__ == "__main__":
    sys.exit(main())
