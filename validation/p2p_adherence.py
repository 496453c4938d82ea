"""Counterfactual sets as calibration images: do Prompt-to-Prompt sets adhere to their
attribute as well as plain counterfactual prompts (issue #45)?

A counterfactual calibration labels each image with the value its prompt names, so an image
that does not show that value reads as judge error (kinds/_judge: hence the bounds). Sets
made with attention control share the source prompt's early attention, which may pull an
edited image back toward the source's value. Here, on toy-sd, for each seed s and each
attribute value v, "a photo of a {v} doctor" drawn

  plain  from the same initial noise, no attention control (today's calibration images)
  p2p    as a member of the Prompt-to-Prompt set at s (cross 0.8, self 0.4; source: the
         first value)

and read by toy-clip on the values' statements ("a photo of a male person", ...). The share
read as the prompted value is the adherence (toy-clip on toy-sd's images is itself a judge,
so the figure bounds adherence from below; both arms are read by the same judge).

    python validation/p2p_adherence.py --fixtures fixtures --seeds 24 --steps 20
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

CASES = (("gender", ("male", "female")), ("age", ("young", "old")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", default="fixtures")
    parser.add_argument("--seeds", type=int, default=24)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--guidance", type=float, default=7.5)
    parser.add_argument("--json")
    args = parser.parse_args()

    import torch
    from diffusers import DiffusionPipeline

    from pytest_t2ibias.backends.prompt2prompt import generate_prompt_set
    from pytest_t2ibias.backends.vqa import ClipAnswerer

    torch.set_num_threads(1)
    pipeline = DiffusionPipeline.from_pretrained(Path(args.fixtures) / "toy-sd")
    pipeline.set_progress_bar_config(disable=True)
    judge = ClipAnswerer.from_pretrained(Path(args.fixtures) / "toy-clip", device="cpu")
    results = {}
    for axis, values in CASES:
        prompts = [f"a photo of a {v} doctor" for v in values]
        statements = [f"a photo of a {v} person" for v in values]
        images: dict[str, list] = {"plain": [], "p2p": []}
        truth = []
        for seed in range(args.seeds):
            for arm, fraction in (("plain", 0.0), ("p2p", 0.8)):
                made, _ = generate_prompt_set(pipeline, prompts, seed=seed, steps=args.steps,
                                              guidance=args.guidance, cross_replace=fraction,
                                              self_replace=fraction / 2)
                images[arm] += made
            truth += list(range(len(values)))
        truth_array = np.array(truth)
        figures = {}
        for arm, pictures in images.items():
            read = np.argmax(judge.score(pictures, f"What is the {axis}?", list(values), statements), axis=1)
            per_value = {v: float(np.mean(read[truth_array == i] == i)) for i, v in enumerate(values)}
            figures[arm] = {"adherence": float(np.mean(read == truth_array)), "per_value": per_value}
        results[axis] = figures
        print(f"{axis:7} " + "  ".join(
            f"{arm}: adherence {f['adherence']:.0%} (" + ", ".join(f"{v} {a:.0%}" for v, a in f["per_value"].items()) + ")"
            for arm, f in figures.items()) + f"  n={args.seeds} a value")
    if args.json:
        Path(args.json).write_text(json.dumps({"seeds": args.seeds, "steps": args.steps, "guidance": args.guidance,
                                               "results": results}, indent=1))


if __name__ == "__main__":
    main()
