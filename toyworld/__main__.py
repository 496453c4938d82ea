"""``python -m toyworld build --world SPEC --out DIR [--quick] [--seed N]``,
``python -m toyworld continue --fixtures DIR --world SPEC [--model toy-sd|toy-clip] [--steps N]``
and ``python -m toyworld train-lm --out DIR [--model toy-lm]``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toyworld", description="Build the toy world's models.")
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="train every toy model of a world and write DIR/manifest.json")
    build_parser.add_argument("--world", default=None, help="world spec YAML (default: the embedded default world)")
    build_parser.add_argument("--out", required=True, help="output directory, e.g. fixtures")
    build_parser.add_argument("--quick", action="store_true", help="tiny training budget, for tests (minutes)")
    build_parser.add_argument("--seed", type=int, default=0)
    build_parser.add_argument(
        "--debias-world",
        default="default",
        help="world spec for the debiased fine-tune ('default': debias_finetune.yaml; 'none': skip it)",
    )
    build_parser.add_argument(
        "--stage",
        action="append",
        dest="stages",
        help="build only this stage (repeatable): toy-sd, toy-sd-debiased, toy-clip, classifiers, toy-lm, quality",
    )
    continue_parser = commands.add_parser(
        "continue", help="train an existing toy-sd (or toy-clip) further on an edited world, in place; the manifest "
                    "(toy-clip: its training.json) records the lineage")
    continue_parser.add_argument("--fixtures", required=True, help="directory with manifest.json and the model")
    continue_parser.add_argument("--world", default=None, help="world spec YAML (default: the embedded default world)")
    continue_parser.add_argument("--model", default="toy-sd", help="toy-sd (or a copy of it), or toy-clip")
    continue_parser.add_argument("--steps", type=int, default=3000)
    continue_parser.add_argument("--lr", type=float, default=5e-4)
    continue_parser.add_argument("--seed", type=int, default=2)
    continue_parser.add_argument("--n-images", type=int, default=None, help="training images (default: the model's build config)")
    continue_parser.add_argument("--decoder-steps", type=int, default=0,
                                 help="also train the VAE's decoder this many steps (a world with a new look); --steps 0: only that")
    continue_parser.add_argument("--vae-steps", type=int, default=0,
                                 help="first train encoder and decoder this many steps, holding the latents of images "
                                      "that look as before (a new axis with detail the frozen encoder loses)")
    continue_parser.add_argument("--object-share", type=float, default=None,
                                 help="share of training captions that show objects (their weights scaled together; "
                                      "the world's shares unchanged)")
    lm_parser = commands.add_parser("train-lm", help="train the toy LMs (or one of them) from scratch into DIR")
    lm_parser.add_argument("--out", required=True)
    lm_parser.add_argument("--world", default=None)
    lm_parser.add_argument("--model", action="append", dest="models", help="toy-lm or toy-lm-eval (repeatable; default both)")
    lm_parser.add_argument("--seed", type=int, default=0)
    labelled_parser = commands.add_parser(
        "labelled", help="render world samples with index.jsonl of their true attributes (a judge audit folder)")
    labelled_parser.add_argument("--out", required=True)
    labelled_parser.add_argument("-n", type=int, default=200)
    labelled_parser.add_argument("--seed", type=int, default=0)
    labelled_parser.add_argument("--subjects", nargs="*", default=None)
    labelled_parser.add_argument("--through-vae", metavar="PIPELINE", default=None,
                                 help="pass every image through this diffusers pipeline's VAE "
                                      "(encode, decode), as detailed as its generations can be")
    args = parser.parse_args(argv)
    if args.command == "labelled":
        from toyworld.render import write_labelled_folder

        if args.through_vae is None:
            rows = write_labelled_folder(args.out, args.n, seed=args.seed, subjects=args.subjects)
            print(f"wrote {len(rows)} labelled images and index.jsonl to {args.out}")
            return 0
        import tempfile

        from toyworld.labelled import vae_roundtrip_folder

        with tempfile.TemporaryDirectory() as rendered:
            write_labelled_folder(rendered, args.n, seed=args.seed, subjects=args.subjects)
            count = vae_roundtrip_folder(rendered, args.out, args.through_vae)
        print(f"wrote {count} labelled images through {args.through_vae}'s VAE and index.jsonl to {args.out}")
        return 0

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    from toyworld.build import DEBIAS_WORLD_PATH, build, continue_training

    if args.command == "train-lm":
        from toyworld.spec import load_world
        from toyworld.train_lm import MODELS, train_lms

        how = (f"python -m toyworld train-lm --out {args.out} --model {{model}} --seed {args.seed}"
               + (f" --world {args.world}" if args.world else ""))
        report = train_lms(load_world(args.world), args.out, seed=args.seed, models=tuple(args.models or MODELS),
                           how=how)
        print(json.dumps(report["models"], indent=2))
        return 0
    if args.command == "continue" and args.model == "toy-clip":
        from toyworld.spec import load_world
        from toyworld.train_clip import continue_clip

        record = continue_clip(load_world(args.world), Path(args.fixtures) / "toy-clip", seed=args.seed)
        print(json.dumps(record["zero_shot"]["templates"], indent=2))
        return 0
    if args.command == "continue":
        continue_training(args.fixtures, args.world, model=args.model, steps=args.steps, lr=args.lr,
                          seed=args.seed, n_images=args.n_images, decoder_steps=args.decoder_steps,
                          vae_steps=args.vae_steps, object_share=args.object_share)
        logging.getLogger(__name__).info("continued %s/%s; rebuild what derives from it (toy-sd-debiased)",
                                         args.fixtures, args.model)
        return 0

    debias = {"default": DEBIAS_WORLD_PATH, "none": None}.get(args.debias_world, args.debias_world)
    manifest = build(args.world, args.out, quick=args.quick, seed=args.seed, debias_world_path=debias, stages=tuple(args.stages or ()) or None)
    logging.getLogger(__name__).info("built %s in %.0fs; manifest: %s/manifest.json", sorted(manifest["models"]), manifest["wall_s"]["total"], args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
