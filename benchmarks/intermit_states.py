"""What InterMit's many-prompt states cost, this checkout against an older one (issue #46).

    git worktree add /tmp/t2i-baseline 0c840e2       # the code to compare against
    python benchmarks/intermit_states.py --baseline /tmp/t2i-baseline

Under the paper protocol InterMit composes every combination of the mitigated axes'
phrasings: ``example_suites/paper/intermit_table1.t2i.yaml``'s 5-axis checks reach states of
216 prompts at one image each. Each code runs the same checks (default: its four 5-axis
checks) cold, in its own process and cache, on the same tiny random-weight SD 1.x and CLIP
(``pytest_t2ibias.testing``: 16 px, 2 steps, 2 images a prompt), one after the other.
Prints each run's wall seconds, images and answers, the ratio this / baseline, and whether
every check's figures are the same; writes them to ``benchmarks/intermit_states.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "example_suites" / "paper" / "intermit_table1.t2i.yaml"
FIVE_AXES = "intermit_architect or intermit_doctor or intermit_mechanic or intermit_musician"


def build_models(folder: Path) -> dict[str, Path]:
    """Tiny SD 1.x and CLIP whose word tokenizers know every word of the suite."""
    sys.path.insert(0, str(ROOT))
    from pytest_t2ibias import testing

    words = sorted(set(re.findall(r"[a-z]+", SUITE.read_text().lower()))
                   | set(testing.DEFAULT_WORDS))
    with testing.torch_threads(1):
        return {"sd": testing.make_tiny_pipeline(folder / "sd", words=words),
                "clip": testing.make_tiny_clip(folder / "clip", words=words)}


def run(code: Path, models: dict[str, Path], folder: Path, checks: str) -> dict[str, Any]:
    """One cold run of ``checks`` with ``code`` first on the path; its report and wall time."""
    folder.mkdir(parents=True)
    shutil.copy(SUITE, folder / SUITE.name)
    (folder / "pytest.ini").write_text(f"[pytest]\nt2i_cache_dir = {folder / 'cache'}\n"
                                       "t2i_device = cpu\nt2i_bootstrap = 50\n")
    report = folder / "report.json"
    command = [sys.executable, "-m", "pytest", SUITE.name, "-q", "-p", "no:cacheprovider",
               "-p", "no:randomly", "-k", checks, f"--t2i-model={models['sd']}",
               f"--t2i-vqa={models['clip']}", "--t2i-images-per-prompt=2", "--t2i-steps=2",
               "--t2i-height=16", "--t2i-width=16", f"--t2i-json={report}"]
    environment = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    subprocess.run(command, cwd=folder, env=environment, stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    data = json.loads(report.read_text())
    return {"code": str(code), "wall_s": round(wall, 1), **data["work"],
            "figures": {c["check_id"]: c["figures"]["intermit"] for c in data["checks"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, required=True,
                        help="a checkout of the code to compare against")
    parser.add_argument("--checks", default=FIVE_AXES, help="a -k expression over the suite")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "intermit_states.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        models = build_models(folder / "models")
        baseline = run(args.baseline.resolve(), models, folder / "baseline", args.checks)
        this = run(ROOT, models, folder / "this", args.checks)
    same = this.pop("figures") == baseline.pop("figures")
    result = {"checks": args.checks, "baseline": baseline, "this": this,
              "wall_ratio": round(this["wall_s"] / baseline["wall_s"], 3),
              "same_figures": same}
    for name in ("baseline", "this"):
        row = result[name]
        print(f"{name:9} {row['wall_s']:8.1f} s  {row['images_generated']:6,} images  "
              f"{row['answers_scored']:7,} answers  ({row['code']})")
    print(f"wall this / baseline: {result['wall_ratio']:.3f}; same figures: {same}")
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
