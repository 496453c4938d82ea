"""Audit the toy world's judges: how well toy CLIP and the attribute classifiers read each axis.

    python validation/judge_audit.py [--people 400] [--objects 150] [--out validation/judge_audit]

Every bias figure is only as good as the judge that read it (OpenBias measured LLaVA at 56% on
race). This renders labelled folders from the toy world (the renderer's true attributes in
``index.jsonl``), once as drawn and once passed through toy-sd's VAE (encode, decode: the
detail a generated image can carry at most), and runs ``t2ibias.audit_judge`` with each judge
on every axis: accuracy with its Wilson interval, the worst value's accuracy, and the
retrieval MaxSkew@K of a neutral query (SocialCounterfactuals' judge-side skew). Writes
``<out>.json`` and prints the table (also ``<out>.txt``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
PEOPLE = ["doctor", "nurse", "musician", "farmer", "engineer", "teacher", "chef", "firefighter",
          "librarian", "mechanic", "accountant"]
OBJECTS = ["laptop", "car", "mug"]


def axes_of(world) -> list:
    """One AxisSpec per world axis, with the statements the toy CLIP was trained on."""
    from pytest_t2ibias.suite_spec import AxisSpec
    from toyworld.train_clip import recommended_statements

    statements = recommended_statements(world)
    return [AxisSpec(name=axis.name, question=f"What is the {axis.name} of the "
                     f"{'person' if axis.applies_to == 'person' else 'object'}?",
                     choices=tuple(axis.values), ordered=axis.ordered,
                     statements=statements[axis.name])
            for axis in world.axes.values()]


def audit(folders: dict[str, Path], axes: list, cache: Path) -> list[dict]:
    from pytest_t2ibias.facade import T2IBias

    classifiers = {axis.name: str(FIXTURES / "classifiers" / axis.name) for axis in axes
                   if (FIXTURES / "classifiers" / axis.name).is_dir()}
    judges = {
        "toy-clip": T2IBias.standalone(vqa=str(FIXTURES / "toy-clip"), cache_dir=cache, offline=True),
        "classifiers": T2IBias.standalone(vqa=str(FIXTURES / "toy-clip"), classifiers=classifiers,
                                          cache_dir=cache, offline=True),
    }
    rows = []
    for images, folder in folders.items():
        for judge, t2i in judges.items():
            for name, result in t2i.audit_judge(folder, axes, confidence=0.95).items():
                worst = min(result.per_value.items(), key=lambda item: item[1].value)
                rows.append({"images": images, "judge": judge, "axis": name,
                             "accuracy": result.accuracy.to_dict(),
                             "worst_value": worst[0], "worst_accuracy": worst[1].to_dict(),
                             "retrieval_max_skew": result.retrieval_max_skew,
                             "retrieval_k": result.retrieval_k, "confusion": result.confusion})
    return rows


def retrieval(row: dict) -> str:
    # audit_judge ranks the folder by "a photo of a person": a judge-side skew for people,
    # meaningless for a folder of objects.
    if "objects" in row["images"]:
        return "n/a (person query)"
    skew = row["retrieval_max_skew"]
    return f"{'unbounded' if skew is None else f'{skew:.3f}'} (K={row['retrieval_k']})"


def table(rows: list[dict]) -> str:
    lines = ["| images | judge | axis | accuracy [95% CI] | n | worst value: accuracy | "
             "retrieval MaxSkew@K |", "|---|---|---|---|---:|---|---:|"]
    for r in rows:
        a, w = r["accuracy"], r["worst_accuracy"]
        lines.append(f"| {r['images']} | {r['judge']} | {r['axis']} | {a['value']:.3f} "
                     f"[{a['low']:.3f}, {a['high']:.3f}] | {a['n']} | {r['worst_value']}: "
                     f"{w['value']:.3f} (n={w['n']}) | "
                     f"{retrieval(r)} |")
    return "\n".join(lines)


def main() -> None:
    from toyworld.labelled import vae_roundtrip_folder
    from toyworld.render import write_labelled_folder
    from toyworld.spec import load_world

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=400)
    parser.add_argument("--objects", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "validation" / "judge_audit")
    args = parser.parse_args()
    world = load_world()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_labelled_folder(tmp / "rendered", args.people, seed=args.seed, subjects=PEOPLE)
        write_labelled_folder(tmp / "rendered-objects", args.objects, seed=args.seed + 1,
                              subjects=OBJECTS)
        vae_roundtrip_folder(tmp / "rendered", tmp / "vae", FIXTURES / "toy-sd")
        vae_roundtrip_folder(tmp / "rendered-objects", tmp / "vae-objects", FIXTURES / "toy-sd")
        folders = {"rendered": tmp / "rendered", "rendered objects": tmp / "rendered-objects",
                   "toy-sd VAE round trip": tmp / "vae",
                   "toy-sd VAE round trip, objects": tmp / "vae-objects"}
        rows = audit(folders, axes_of(world), tmp / "cache")
    args.out.with_suffix(".json").write_text(json.dumps(
        {"people": args.people, "objects": args.objects, "seed": args.seed, "rows": rows}, indent=1))
    text = table(rows)
    args.out.with_suffix(".txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
