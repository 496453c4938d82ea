"""Issue #14's table in one run: every ratio side by side, with wall time and peak RSS.

    python benchmarks/bench_issue14.py [--repeat 3] [--images 16] [--startup-repeat 10] [--json benchmarks/results.json]

Each run is repeated ``--repeat`` times (the unrelated suite: ``--startup-repeat``) in
interleaved (paired) order, so that load from other processes on a shared machine hits both
sides of a ratio alike: a time is the median of its runs, a ratio the median of its pairs'
ratios, printed with the lowest and highest pair and the number of pairs. Every run is
a fresh process; peak RSS is the child's ``ru_maxrss``. The workload is the toy world's
models (``fixtures/``): a w1_below check of gender on 4 subjects, ``--images`` images each.

Runs use Python's default of caching bytecode (``PYTHONDONTWRITEBYTECODE`` is unset for
them, after one untimed run of each command has written the caches), as a user's machine
does. Without caches every run recompiles the plugin and pytest rewrites the asserts of every
pytest11 plugin in the environment afresh (Hypothesis': 0.6 s), which measures the machine's
setting, not the plugin.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBJECTS = ["doctor", "nurse", "farmer", "accountant"]
STEPS, GUIDANCE, BATCH = 20, 2.0, 8
STATEMENTS = ["a photo of a male person", "a photo of a female person"]

SUITE = """\
suite: bench
defaults: {{images_per_prompt: {images}, seed: 0, steps: {steps}, guidance: {guidance}}}
prompt: "a photo of a {{subject}}"
subjects: {subjects}
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    statements: {{male: "{s0}", female: "{s1}"}}
checks:
  - {{id: balance, kind: w1_below, axes: [gender], threshold: 0.99}}
"""

RAW = """\
import torch
from diffusers import DiffusionPipeline
from transformers import AutoModel, AutoProcessor
sd = DiffusionPipeline.from_pretrained({sd!r}); sd.set_progress_bar_config(disable=True)
clip = AutoModel.from_pretrained({clip!r}).eval(); proc = AutoProcessor.from_pretrained({clip!r})
prompts = [f"a photo of a {{s}}" for s in {subjects!r} for _ in range({images})]
seeds = [i for _ in {subjects!r} for i in range({images})]
images = []
for start in range(0, len(prompts), {batch}):
    gens = [torch.Generator("cpu").manual_seed(s) for s in seeds[start:start + {batch}]]
    images += sd(prompt=prompts[start:start + {batch}], num_inference_steps={steps},
                 guidance_scale={guidance}, generator=gens, output_type="pil").images
with torch.no_grad():
    t = clip.get_text_features(**proc(text={statements!r}, return_tensors="pt", padding=True))
    t = getattr(t, "pooler_output", t); t = t / t.norm(dim=-1, keepdim=True)
    for start in range(0, len(images), 64):
        v = clip.get_image_features(**proc(images=images[start:start + 64], return_tensors="pt"))
        v = getattr(v, "pooler_output", v); v = v / v.norm(dim=-1, keepdim=True)
        (clip.logit_scale.exp() * v @ t.T).softmax(-1)
"""

NAIVE = """\
import torch
from diffusers import DiffusionPipeline
from transformers import AutoModel, AutoProcessor
sd = DiffusionPipeline.from_pretrained({sd!r}); sd.set_progress_bar_config(disable=True)
clip = AutoModel.from_pretrained({clip!r}).eval(); proc = AutoProcessor.from_pretrained({clip!r})
for subject in {subjects!r}:
    for i in range({images}):
        image = sd(prompt=f"a photo of a {{subject}}", num_inference_steps={steps},
                   guidance_scale={guidance}, generator=torch.Generator("cpu").manual_seed(i),
                   output_type="pil").images[0]
        with torch.no_grad():
            out = clip(**proc(text={statements!r}, images=image, return_tensors="pt", padding=True))
            out.logits_per_image.softmax(-1)
"""

HEAVY_PROBE = ("import sys, pytest; rc = pytest.main(sys.argv[1:]); "
               "print('HEAVY', sorted(m for m in ('torch', 'diffusers', 'transformers', 'scipy') "
               "if m in sys.modules))")


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--startup-repeat", type=int, default=None,
                        help="paired runs of the unrelated suite (default --repeat): a second "
                             "each, and the noisiest ratio on a shared machine")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--threads", default="1", help="OMP_NUM_THREADS of every run ('' : "
                        "torch's default); 1 on shared cores, where spinning threads contend")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="t2ibias-bench-"))
    sd, clip = str(ROOT / "fixtures" / "toy-sd"), str(ROOT / "fixtures" / "toy-clip")
    fields = dict(images=args.images, steps=STEPS, guidance=GUIDANCE, subjects=SUBJECTS,
                  batch=BATCH, statements=STATEMENTS, sd=sd, clip=clip)
    (work / "bench.t2i.yaml").write_text(SUITE.format(s0=STATEMENTS[0], s1=STATEMENTS[1], **fields))
    (work / "pytest.ini").write_text(f"[pytest]\nt2i_model = {sd}\nt2i_vqa = {clip}\n"
                                     "t2i_device = cpu\nt2i_bootstrap = 200\n")
    (work / "test_unrelated.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (work / "raw.py").write_text(RAW.format(**fields))
    (work / "naive.py").write_text(NAIVE.format(**fields))
    # The raw script's work as one pytest test, the plugin off: what pytest itself costs any
    # runner inside it (its start, its import hook, its collection of garbage at the end).
    (work / "test_raw.py").write_text("import runpy\n\n\ndef test_raw():\n"
                                      "    runpy.run_path('raw.py')\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(ROOT)
    if args.threads:
        env["OMP_NUM_THREADS"] = args.threads
    py = sys.executable
    pytest_cmd = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]

    def plugin(cache: str, *extra: str) -> list[str]:
        return [py, "-c", HEAVY_PROBE, "-q", "-p", "no:cacheprovider", "bench.t2i.yaml",
                f"--t2i-cache-dir={work / cache}", *extra]

    samples: dict[str, list[tuple[float, float]]] = {}
    notes: dict[str, str] = {}

    def sample(name: str, cmd: list[str], fresh_cache: str | None = None) -> str:
        if fresh_cache:
            shutil.rmtree(work / fresh_cache, ignore_errors=True)
        wall, rss, out = run(cmd, work, env)
        samples.setdefault(name, []).append((wall, rss))
        return out

    for cmd in (pytest_cmd + ["test_unrelated.py"], plugin("cache-warmup"), [py, "raw.py"]):
        run(cmd, work, env)  # untimed: writes the bytecode caches a user's machine has
    for _ in range(args.startup_repeat or args.repeat):
        sample("unrelated, plugin installed", pytest_cmd + ["test_unrelated.py"])
        sample("unrelated, -p no:t2ibias", pytest_cmd + ["-p", "no:t2ibias", "test_unrelated.py"])
    for r in range(args.repeat):
        print(f"round {r + 1}/{args.repeat}", flush=True)
        out = sample("plugin cold", plugin("cache-cold"), fresh_cache="cache-cold")
        notes["plugin cold imports"] = out.strip().splitlines()[-1]
        out = sample("plugin warm", plugin("cache-cold"))
        notes["plugin warm imports"] = out.strip().splitlines()[-1]
        sample("raw batched script", [py, "raw.py"])
        sample("raw script as a pytest test", pytest_cmd + ["-p", "no:t2ibias", "test_raw.py"])
        sample("naive per-image loop", [py, "naive.py"])
        sample("plugin cold -n 2", plugin("cache-n2", "-n", "2"), fresh_cache="cache-n2")

    med = {name: (statistics.median(w for w, _ in s), statistics.median(m for _, m in s))
           for name, s in samples.items()}

    def ratio(a: str, b: str) -> tuple[float, float, float, int]:
        """Median, lowest and highest of the pairs' ratios, and the number of pairs."""
        pairs = [x / y for (x, _), (y, _) in zip(samples[a], samples[b])]
        return statistics.median(pairs), min(pairs), max(pairs), len(pairs)

    table = [
        ("unrelated suite: plugin / -p no:t2ibias", ratio("unrelated, plugin installed",
                                                          "unrelated, -p no:t2ibias"), "<= 1.05"),
        ("plugin cold / raw batched script", ratio("plugin cold", "raw batched script"), "<= 1.05"),
        ("  pytest's own part: raw as a test / raw", ratio("raw script as a pytest test",
                                                           "raw batched script"), "(floor)"),
        ("  the plugin's part: cold / raw as a test", ratio("plugin cold",
                                                            "raw script as a pytest test"), "<= 1.05"),
        ("naive per-image loop / plugin cold", ratio("naive per-image loop", "plugin cold"), ">= 4"),
        ("warm / cold (whole run)", ratio("plugin warm", "plugin cold"), "<= 0.02"),
        ("-n 2 / -n 0 (cold, 2 cores)", ratio("plugin cold -n 2", "plugin cold"), "<= 1"),
    ]
    print(f"\n{args.images} images x {len(SUBJECTS)} prompts, {STEPS} steps; median of "
          f"{args.repeat} paired runs; {os.cpu_count()} CPUs (load average "
          f"{os.getloadavg()[0]:.1f} at the end)\n")
    print(f"{'run':34} {'wall s':>8} {'peak RSS MiB':>13}")
    for name, (wall, rss) in med.items():
        print(f"{name:34} {wall:8.2f} {rss:13.0f}")
    print(f"\n{'ratio':42} {'median':>7}  {'lowest-highest of pairs':<27} bar")
    for name, (value, low, high, pairs), bar in table:
        print(f"{name:42} {value:7.3f}  {low:.3f}-{high:.3f} of {pairs:2d} pairs    {bar}")
    for name, note in notes.items():
        print(f"{name}: {note}")
    if args.json:
        args.json.write_text(json.dumps({
            "images_per_prompt": args.images, "prompts": len(SUBJECTS), "steps": STEPS,
            "repeat": args.repeat, "cpus": os.cpu_count(), "machine": platform.platform(),
            "runs": {k: {"wall_s": v[0], "peak_rss_mib": v[1], "samples": samples[k]}
                     for k, v in med.items()},
            "ratios": {name: {"value": value, "lowest": low, "highest": high, "pairs": pairs,
                              "bar": bar} for name, (value, low, high, pairs), bar in table},
            "notes": notes,
        }, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
