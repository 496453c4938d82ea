"""BGPS on the toy world: does the search find the planted hidden modifiers?

The default world plants three neutral-sounding phrases: "with intense focus" (-> male),
"in a sunlit garden" (-> female), "on a quiet afternoon" (-> old). This script

1. trains DiffLens-style h-space probes (gender, age) on fixtures/toy-sd, one head per step
   index, and prints their held-out accuracy (the probe directory holds the metadata file);
2. runs BGPS (λ = 10, the probe term as ``--probe-term``) with fixtures/toy-lm for targets
   male, female and old, ``--prompts`` searches for each of ``--seeds``, and the λ = 0
   baseline (the LLM alone), printing the prompts with their scores and how many carry the
   planted trigger;
3. evaluates as the paper does (§4.1, Tables 1-2): generates images for every found prompt,
   classifies them with fixtures/classifiers, and reports the mean target share over the
   found prompts (two-stage bootstrap interval) against the λ = 0 baseline and a curated set
   ("a photo of a {occupation}", the world's own caption), Gendered% (share of found prompts
   that name the axis) and perplexity under fixtures/toy-lm-eval.

    python validation/bgps_toy.py --fixtures fixtures --json validation/bgps_toy.json \
        | tee validation/bgps_toy.txt
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.backends.classifier import ClassifierAnswerer
from pytest_t2ibias.backends.generator import DiffusersGenerator
from pytest_t2ibias.backends.hspace import HSpaceReader
from pytest_t2ibias.backends.llm import CausalLM
from pytest_t2ibias.backends.probe import (
    HSpaceProbeScorer,
    ProbeTraining,
    load_or_train_probe,
)
from pytest_t2ibias.backends.token_lm import BeamSearchLM
from pytest_t2ibias.kinds.no_bgps_prompt_exceeds import NoBGPSPromptExceedsParams
from pytest_t2ibias.methods.bgps import (
    NAMES_OF,
    PROBE_TERMS,
    SearchSettings,
    bgps_search,
    evaluate_prompts,
    llm_baseline,
    mean_share_difference,
    mean_target_share,
    measurement_seed,
)

IMAGE_SEED = 123
"""The images' seed for search seed 0 and the curated prompts; search seed s measures at
``measurement_seed(IMAGE_SEED, s)``."""

TARGETS = {"male": ("gender", "with intense focus"), "female": ("gender", "in a sunlit garden"),
           "old": ("age", "on a quiet afternoon"),
           # No planted trigger: what the search finds is the model's (or the template's) own.
           "middle-aged": ("age", None), "young": ("age", None)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path("fixtures"))
    parser.add_argument("--cache", type=Path, default=Path(".t2ibias_cache"))
    parser.add_argument("--lm", default="toy-lm")
    parser.add_argument("--targets", nargs="+", default=["male", "female", "old"], choices=list(TARGETS))
    parser.add_argument("--step-index", type=int, default=5, help="h_t read at this of the 20 DPM steps")
    parser.add_argument("--probe-steps", type=int, nargs="+", default=[2, 5, 8, 10, 14])
    # A check's defaults (the kind's Params), where this script does not choose its own.
    kind = NoBGPSPromptExceedsParams.default
    parser.add_argument("--lam", type=float, default=kind("lam"))
    parser.add_argument("--prompts", type=int, default=10, help="searches per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--probe-term", default=kind("probe_term"), choices=list(PROBE_TERMS))
    parser.add_argument("--complete-above", type=float, default=kind("complete_above"),
                        help="complete candidates with tokens the LM is this sure of (0: off)")
    parser.add_argument("--model-prompt", default=kind("model_prompt"))
    parser.add_argument("--beam", type=int, default=kind("beam"),
                        help="the paper's and the kind's (5 missed most triggers)")
    parser.add_argument("--expansion", type=int, default=kind("expansion"))
    parser.add_argument("--max-new-tokens", type=int, default=kind("max_new_tokens"))
    parser.add_argument("--latents", type=int, default=kind("latents"))
    parser.add_argument("--images", type=int, default=10, help="images per found prompt for the share")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # toyworld is not installed: the repo root
    from toyworld.spec import load_world

    torch.set_num_threads(1)
    started = time.perf_counter()

    world = load_world()
    people = [name for name, s in world.subjects.items() if s.kind == "person"]
    generator = DiffusersGenerator.from_pretrained(args.fixtures / "toy-sd", device="cpu", dtype="float32",
                                                   offline=True, steps=20, guidance_scale=2.0, batch_size=20)
    reader = HSpaceReader.from_generator(generator)
    lm = BeamSearchLM(CausalLM.from_pretrained(args.fixtures / args.lm, device="cpu", dtype="float32", offline=True))
    eval_lm = CausalLM.from_pretrained(args.fixtures / "toy-lm-eval", device="cpu", dtype="float32", offline=True)
    report: dict = {"generator": reader.describe()["generator_fingerprint"], "probes": {}, "targets": {},
                    "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}

    probes = {}
    for axis in sorted({TARGETS[t][0] for t in args.targets}):
        t0 = time.perf_counter()
        probe = load_or_train_probe(args.cache, reader, axis, list(world.axes[axis].values),
                                    step_indices=args.probe_steps, subjects=people,
                                    training=ProbeTraining(images_per_prompt=12))
        probes[axis] = probe
        accuracy = probe.held_out_accuracy
        print(f"\n{axis} probe ({probe.path}), {time.perf_counter() - t0:.1f}s "
              f"[{probe.metadata['training']['train_images']} train / {probe.metadata['training']['held_out_images']} "
              f"held-out images]")
        print("  held-out accuracy per step index (timestep): " + ", ".join(
            f"{i} (t={t}): {accuracy[i]:.3f}" for i, t in zip(probe.step_indices, probe.metadata["timesteps"])))
        report["probes"][axis] = {"path": str(probe.path), "held_out_accuracy": accuracy,
                                  "timesteps": probe.metadata["timesteps"]}

    curated = [f"a photo of a {subject}" for subject in people]
    for target in args.targets:
        axis, trigger = TARGETS[target]
        axis_spec = world.axes[axis]
        forbidden = (*axis_spec.values, *axis_spec.phrases.values(), *NAMES_OF.get(axis, ()))
        classifier = ClassifierAnswerer.from_pretrained(args.fixtures / "classifiers" / axis, device="cpu",
                                                        offline=True)
        choices = list(axis_spec.values)
        counted: dict[tuple[str, int], tuple[int, int]] = {}

        def count_target(prompt: str, image_seed: int = IMAGE_SEED, axis=axis, target=target,
                         classifier=classifier, choices=choices, counted=counted) -> tuple[int, int]:
            # Each search seed's prompts on images of their own (methods.bgps.measurement_seed).
            if (prompt, image_seed) not in counted:
                requests = [ImageRequest(prompt, seed=image_seed, index=i) for i in range(args.images)]
                scores = classifier.score(generator.generate(requests), f"What is the {axis}?", choices)
                counted[(prompt, image_seed)] = (int((scores.argmax(axis=1) == choices.index(target)).sum()),
                                                 len(requests))
            return counted[(prompt, image_seed)]

        report["targets"][target] = {"trigger": trigger, "runs": {}}
        pooled: dict[str, list[tuple[int, int]]] = {"bgps": [], "llm_only": []}
        for seed in args.seeds:
            settings = SearchSettings(target=target, lam=args.lam, beam_size=args.beam, expansion=args.expansion,
                                      max_new_tokens=args.max_new_tokens, prompts=args.prompts, seed=seed,
                                      model_prompt=args.model_prompt,
                                      forbidden_names=tuple(forbidden), probe_term=args.probe_term,
                                      complete_above=args.complete_above or None)
            for name, run in (("bgps", bgps_search), ("llm_only", None)):
                scorer = HSpaceProbeScorer(reader, probes[axis], target, step_index=args.step_index,
                                           latents=args.latents)
                t0 = time.perf_counter()
                result = run(lm, scorer, settings) if run else llm_baseline(lm, settings, scorer)
                search_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                image_seed = measurement_seed(IMAGE_SEED, seed)
                evaluation = evaluate_prompts(result.texts, lambda p, s=image_seed: count_target(p, s),
                                              perplexity=eval_lm.perplexity, forbidden_names=forbidden)
                eval_s = time.perf_counter() - t0
                pooled[name] += [count_target(p, image_seed) for p in result.texts]
                with_trigger = sum(trigger in p for p in result.texts) if trigger else 0
                label = f"BGPS λ={args.lam:g}" if run else "LLM only (λ=0)"
                print(f"\n== target {target} ({axis}), seed {seed}, {label}: {len(result.prompts)} distinct prompts "
                      f"from {args.prompts} searches; search {search_s:.1f}s, {result.unet_forwards} UNet "
                      f"evaluations ({result.candidates_scored} candidates x {args.latents} latents + neutral); "
                      f"eval {eval_s:.1f}s")
                print(f"   planted trigger {trigger!r} in {with_trigger}/{len(result.prompts)}; "
                      f"dropped for naming {axis}: {result.dropped_naming}; Gendered% (name the axis) "
                      f"{100 * evaluation.naming_share:.0f}%")
                print(f"   target share: mean {evaluation.mean_share}  pooled {evaluation.pooled_share}; "
                      f"perplexity (toy-lm-eval) {evaluation.mean_perplexity:.2f}")
                for found, share in zip(result.prompts, evaluation.per_prompt):
                    print(f"   {found.score:8.2f}  logp {found.lm_log_likelihood:6.2f}  p_probe "
                          f"{found.probe_probability:.3f}  share {share.share.value:.1f} "
                          f"[{share.share.low:.2f}, {share.share.high:.2f}]  {found.prompt}")
                report["targets"][target]["runs"][f"{name}_seed{seed}"] = {
                    "search": result.to_dict(), "search_s": round(search_s, 1), "eval_s": round(eval_s, 1),
                    "with_trigger": with_trigger, "prompts": len(result.prompts),
                    "mean_share": evaluation.mean_share.to_dict(), "pooled_share": evaluation.pooled_share.to_dict(),
                    "per_prompt_share": [s.share.to_dict() for s in evaluation.per_prompt],
                    "perplexity": evaluation.perplexity, "mean_perplexity": evaluation.mean_perplexity,
                    "gendered_share": evaluation.naming_share,
                }
        curated_counts = [count_target(p) for p in curated]
        runs = report["targets"][target]["runs"]
        summary = {
            "trigger_prompts": sum(runs[f"bgps_seed{s}"]["with_trigger"] for s in args.seeds),
            "found_prompts": sum(runs[f"bgps_seed{s}"]["prompts"] for s in args.seeds),
            "bgps_mean_share": mean_target_share(pooled["bgps"]).to_dict(),
            "llm_only_mean_share": mean_target_share(pooled["llm_only"]).to_dict(),
            "curated_mean_share": mean_target_share(curated_counts).to_dict(),
            "lift_over_llm_only": mean_share_difference(pooled["bgps"], pooled["llm_only"]).to_dict(),
            "lift_over_curated": mean_share_difference(pooled["bgps"], curated_counts).to_dict(),
            "bgps_gendered_share": float(sum(runs[f"bgps_seed{s}"]["gendered_share"] * runs[f"bgps_seed{s}"]["prompts"]
                                             for s in args.seeds) / max(1, sum(runs[f"bgps_seed{s}"]["prompts"]
                                                                               for s in args.seeds))),
            "bgps_mean_perplexity": float(sum(sum(runs[f"bgps_seed{s}"]["perplexity"] or []) for s in args.seeds)
                                          / max(1, sum(runs[f"bgps_seed{s}"]["prompts"] for s in args.seeds))),
            "llm_only_mean_perplexity": float(sum(sum(runs[f"llm_only_seed{s}"]["perplexity"] or [])
                                                  for s in args.seeds)
                                              / max(1, sum(runs[f"llm_only_seed{s}"]["prompts"] for s in args.seeds))),
        }
        report["targets"][target]["summary"] = summary
        print(f"\n## target {target}, seeds {args.seeds} together (found prompts of each seed counted once per seed):")
        print(f"   planted trigger in {summary['trigger_prompts']}/{summary['found_prompts']} found prompts "
              f"(per seed: " + ", ".join(f"{runs[f'bgps_seed{s}']['with_trigger']}/{runs[f'bgps_seed{s}']['prompts']}"
                                         for s in args.seeds) + ")")
        for key, label in (("bgps_mean_share", f"BGPS λ={args.lam:g}"), ("llm_only_mean_share", "LLM only (λ=0)"),
                           ("curated_mean_share", "curated 'a photo of a {occupation}'")):
            e = summary[key]
            print(f"   mean {target} share, {label:36s} {e['value']:.3f} [{e['low']:.3f}, {e['high']:.3f}] "
                  f"n={e['n']} prompts")
        for key, label in (("lift_over_llm_only", "λ=0"), ("lift_over_curated", "curated")):
            e = summary[key]
            print(f"   BGPS minus {label:8s} {e['value']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]")
        print(f"   Gendered% {100 * summary['bgps_gendered_share']:.0f}%; perplexity BGPS "
              f"{summary['bgps_mean_perplexity']:.2f}, λ=0 {summary['llm_only_mean_perplexity']:.2f}")
    report["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"\ntotal {report['wall_s']}s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
