"""Do Prompt-to-Prompt counterfactual sets share everything but the attribute?

For each pipeline (toy-sd, and the tiny random-weight SD 1.x and SDXL pipelines) and each
attribute set, over seeds s = 0..n-1 we make the set with attention control (P2P), the set with
the same initial noise only (what the plugin's counterfactual prompts do today), and compare
the mean absolute pixel distance (0-255) between:

  p2p       two images of one P2P set (same seed, different attribute values)
  noise     two images of one same-noise set (same seed, no attention control)
  unpaired  the same two prompts at seeds s and s + 1 (what "different images" look like)

and the same three outside the attribute's region (pixels where the edited tokens' mean
cross-attention, ``CounterfactualSet.attribute_region``, is below half its range).

Then SocialCounterfactuals' filter and selection on toy-sd read by toy-clip: candidates over
seeds and P2P's replace fraction p (cross p, self p/2), the share passing the 0.2 filter, the
mean directional similarity, and how often each p is the selected candidate of a seed's sets.

    python validation/p2p_pairing.py --fixtures fixtures --seeds 8 --steps 20
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path

import numpy as np


def _pixels(image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float64)


def _distance(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> float:
    diff = np.abs(a - b).mean(axis=-1)
    return float(diff[mask].mean() if mask is not None and mask.any() else diff.mean())


def pairing_figures(pipeline, template: str, attributes: dict, seeds: int, steps: int, guidance: float,
                    cross_replace: float = 0.8, self_replace: float = 0.4) -> dict[str, float]:
    """Mean pixel distances p2p / noise / unpaired, everywhere and outside the attribute region."""
    from pytest_t2ibias.backends.prompt2prompt import generate_counterfactual_set

    def make(seed: int, control: bool):
        return generate_counterfactual_set(
            pipeline, template, attributes, seed=seed, steps=steps, guidance=guidance,
            cross_replace=cross_replace if control else 0.0, self_replace=self_replace if control else 0.0)

    sets = {s: make(s, True) for s in range(seeds + 1)}
    plain = {s: make(s, False) for s in range(seeds)}
    sums: dict[str, list[float]] = {k: [] for k in ("p2p", "noise", "unpaired", "p2p_outside",
                                                      "noise_outside", "unpaired_outside", "region_share")}
    for s in range(seeds):
        region = sets[s].attribute_region
        outside = None if region is None else region < 0.5
        sums["region_share"].append(float(1 - outside.mean()) if outside is not None else float("nan"))
        p2p = [_pixels(m.image) for m in sets[s].members]
        noise = [_pixels(m.image) for m in plain[s].members]
        other = [_pixels(m.image) for m in sets[s + 1].members]
        for i, j in itertools.combinations(range(len(p2p)), 2):
            for name, a, b in (("p2p", p2p[i], p2p[j]), ("noise", noise[i], noise[j]),
                               ("unpaired", p2p[i], other[j])):
                sums[name].append(_distance(a, b))
                sums[name + "_outside"].append(_distance(a, b, outside))
    return {k: float(np.mean(v)) for k, v in sums.items()}


def selection_figures(pipeline, judge, template: str, attributes: dict, seeds: int, steps: int,
                      guidance: float, fractions=(0.0, 0.4, 0.8)) -> dict[str, dict[str, float]]:
    """Per replace fraction: the share of candidates passing the filter, their mean directional
    similarity, and the share of seeds whose selected candidate (best of the fractions) it is."""
    from pytest_t2ibias.backends.prompt2prompt import generate_counterfactual_set
    from pytest_t2ibias.metrics.counterfactual_sets import score_candidate, select_candidates

    per_fraction: dict[float, list] = {p: [] for p in fractions}
    chosen: dict[float, int] = {p: 0 for p in fractions}
    for seed in range(seeds):
        candidates = []
        for p in fractions:
            made = generate_counterfactual_set(pipeline, template, attributes, seed=seed, steps=steps,
                                               guidance=guidance, cross_replace=p, self_replace=p / 2)
            score = score_candidate(judge, [m.image for m in made.members], [m.prompt for m in made.members],
                                    label=p)
            per_fraction[p].append(score)
            candidates.append(score)
        for best in select_candidates(candidates):
            chosen[best.label] += 1
    return {str(p): {"passed": float(np.mean([s.passed for s in scores])),
                     "directional": float(np.nanmean([s.directional for s in scores])),
                     "selected": chosen[p] / seeds} for p, scores in per_fraction.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", default="fixtures")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--guidance", type=float, default=7.5)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    import torch
    from diffusers import DiffusionPipeline

    from pytest_t2ibias import testing

    torch.set_num_threads(1)
    cases = [
        ("toy-sd", Path(args.fixtures) / "toy-sd", "a photo of a {} doctor", {"gender": ["male", "female"]}),
        ("toy-sd", Path(args.fixtures) / "toy-sd", "a photo of a {} doctor",
         {"age": ["young", "old"], "gender": ["male", "female"]}),
        ("toy-sd", Path(args.fixtures) / "toy-sd", "a photo of a {} doctor", {"age": ["young", "middle-aged"]}),
    ]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        cases += [
            ("tiny-sd1", testing.make_tiny_pipeline(Path(tmp) / "sd"), "a photo of a {} doctor",
             {"age": ["young", "old"], "gender": ["male", "female"]}),
            ("tiny-sdxl", testing.make_tiny_sdxl(Path(tmp) / "sdxl"), "a photo of a {} doctor",
             {"age": ["young", "old"], "gender": ["male", "female"]}),
        ]
        loaded: dict[str, object] = {}
        for name, path, template, attributes in cases:
            if name not in loaded:
                loaded[name] = DiffusionPipeline.from_pretrained(path)
                loaded[name].set_progress_bar_config(disable=True)
            figures = pairing_figures(loaded[name], template, attributes, args.seeds, args.steps, args.guidance)
            results.append({"pipeline": name, "attributes": attributes, **figures})
            groups = " x ".join(f"{a}({'/'.join(v)})" for a, v in attributes.items())
            print(f"{name:9} {groups:36} p2p {figures['p2p']:6.2f}  noise {figures['noise']:6.2f}  "
                  f"unpaired {figures['unpaired']:6.2f} | outside region "
                  f"({1 - figures['region_share']:.0%} of pixels): p2p {figures['p2p_outside']:6.2f}  "
                  f"noise {figures['noise_outside']:6.2f}  unpaired {figures['unpaired_outside']:6.2f}")
        selection = []
        clip = Path(args.fixtures) / "toy-clip"
        if clip.is_dir():
            from pytest_t2ibias.backends.vqa import ClipAnswerer

            judge = ClipAnswerer.from_pretrained(clip, device="cpu")
            for attributes in ({"gender": ["male", "female"]}, {"age": ["young", "middle-aged"]},
                               {"age": ["young", "old"], "gender": ["male", "female"]}):
                figures = selection_figures(loaded["toy-sd"], judge, "a photo of a {} doctor", attributes,
                                            args.seeds, args.steps, args.guidance)
                selection.append({"attributes": attributes, "by_fraction": figures})
                groups = " x ".join(f"{a}({'/'.join(v)})" for a, v in attributes.items())
                print(f"toy-clip  {groups:36} " + "  ".join(
                    f"p={p}: passed {f['passed']:.0%} directional {f['directional']:.3f} selected {f['selected']:.0%}"
                    for p, f in figures.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"seeds": args.seeds, "steps": args.steps, "guidance": args.guidance,
                                               "results": results, "selection": selection}, indent=1))


if __name__ == "__main__":
    main()
