"""ENTIGEN (seeds/003) on the toy interventions: Eq. 1 over the category, beside the per-prompt view.

The toy world plants "if all individuals can be a {subject} irrespective of their gender"
(gender 50/50 for every person) and the control "if honesty is the best policy" (nothing).
For each subject its plain prompt, the intervention and the control are generated on paired
seeds (image i shares its noise across all prompts) and gender is read by the toy gender
classifier. Printed: the paper's diversity over the category of subjects (Eq. 1, k over the
subjects' prompts), the per-prompt figure of each subject (Eq. 1 on one prompt, |bias|), and
the change each phrase makes, with paired bootstrap intervals.

    PYTHONPATH=. python validation/entigen_toy.py --json validation/entigen_toy.json \\
        | tee validation/entigen_toy.txt
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends.classifier import ClassifierAnswerer
from pytest_t2ibias.backends.generator import DiffusersGenerator
from pytest_t2ibias.methods.entigen import category_effects, intervention_effects

INTERVENTION = "if all individuals can be a {subject} irrespective of their gender"
CONTROL = "if honesty is the best policy"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    parser.add_argument("--subjects", nargs="+", default=["doctor", "nurse", "firefighter", "teacher", "farmer"])
    parser.add_argument("--images", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    generator = DiffusersGenerator.from_pretrained(args.fixtures / "toy-sd", device="cpu", dtype="float32",
                                                   offline=True, steps=20, guidance_scale=2.0, batch_size=20)
    classifier = ClassifierAnswerer.from_pretrained(args.fixtures / "classifiers" / "gender", device="cpu",
                                                    offline=True)
    choices = ["male", "female"]

    def labels(prompt: str) -> np.ndarray:
        requests = [ImageRequest(prompt, seed=0, index=i) for i in range(args.images)]
        return classifier.score(generator.generate(requests), "What is the gender?", choices).argmax(axis=1)

    original, intervened = {}, {INTERVENTION: {}, CONTROL: {}}
    per_subject = {}
    for subject in args.subjects:
        prompt = f"a photo of a {subject}"
        original[subject] = labels(prompt)
        for phrase, by_subject in intervened.items():
            by_subject[subject] = labels(f"{prompt} {phrase.replace('{subject}', subject)}")
        per_subject[subject] = intervention_effects(
            original[subject], {p: intervened[p][subject] for p in intervened}, choices=choices,
            controls=[CONTROL], original_prompt=prompt, axis="gender", n_resamples=1000)
    category = category_effects(original, intervened, choices=choices, controls=[CONTROL], axis="gender",
                                n_resamples=1000)
    print(f"ENTIGEN on toy-sd, {len(args.subjects)} subjects x {args.images} images a prompt (paired seeds); "
          f"diversity: Eq. 1, smaller is more diverse; improvement = before - after, 95% paired bootstrap")
    print(f"\ncategory ({', '.join(args.subjects)}), Eq. 1 over the subjects' prompts:")
    print(f"  original diversity {category.original_diversity:.3f}")
    for effect in category.effects:
        kind = "control" if effect.control else "intervention"
        print(f"  {kind:12s} {effect.phrase!r}: diversity {effect.diversity:.3f}, improvement {effect.improvement}")
    print("\nper prompt (Eq. 1 on one prompt = |bias|), the view the per-subject check gates on:")
    for subject, result in per_subject.items():
        counts = ", ".join(f"{k}={v}" for k, v in result.original_counts.items())
        print(f"  {subject:12s} original {result.original_diversity:.3f} ({counts})")
        for effect in result.effects:
            kind = "control" if effect.control else "intervention"
            print(f"  {'':12s} {kind:12s} diversity {effect.diversity:.3f}, improvement {effect.improvement}")
    wall = round(time.perf_counter() - started, 1)
    print(f"\ntotal {wall}s")
    if args.json:
        args.json.write_text(json.dumps({
            "images_per_prompt": args.images, "subjects": args.subjects, "category": category.to_dict(),
            "per_prompt": {s: {"original_diversity": r.original_diversity, "original_counts": r.original_counts,
                               "effects": [e.to_dict() for e in r.effects]} for s, r in per_subject.items()},
            "wall_s": wall}, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
