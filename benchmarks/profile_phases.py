"""Issue #46: where a cold example run's time goes, by phase: model loads, generation,
judging, BGPS search and probe training, reports, and the rest.

    python benchmarks/profile_phases.py example_suites/toy_occupations.t2i.yaml -k gender_balance_control
    python benchmarks/profile_phases.py example_suites/toy_bgps.t2i.yaml

Runs pytest in this process under cProfile, with a fresh cache (every image generated, every
answer scored), and reads each phase as the cumulative time of its entry points (the
functions below; a phase's entry points never call one another). Phases can nest: a BGPS
search generates images and reads the UNet, so its seconds include some generation's.
The rest is collection, planning, statistics and pytest. Only the main thread is profiled:
the cache writes run on the writer thread and are not counted. A suite whose BGPS prompts are
locked (``*.bgps.lock.json``) reads them and searches nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PHASES: dict[str, tuple[tuple[str, str], ...]] = {
    "model loads": (("backends/_hf.py", "load_pretrained"),),
    "generation": (("backends/generator.py", "_sample"),),
    "judging": (("backends/vqa.py", "score"), ("backends/vqa.py", "embed_images"),
                ("backends/classifier.py", "score")),
    "BGPS search": (("methods/bgps/search.py", "bgps_search"),),
    "probe training": (("backends/probe.py", "train_probe"),),
    "adaptive looks (each look's statistics)": (("session_plan.py", "decided"),),
    "reports": (("_session.py", "_write_report"), ("reports/terminal.py", "summary_table")),
    "imports (some inside model loads)": (("<frozen importlib._bootstrap>", "_find_and_load"),),
}
"""Phase -> (file suffix, function name) entry points."""


def phase_seconds(stats: pstats.Stats) -> dict[str, float]:
    seconds = dict.fromkeys(PHASES, 0.0)
    for (filename, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        path = filename.replace("\\", "/")
        for phase, entries in PHASES.items():
            if any(path.endswith(suffix) and name == function for suffix, function in entries):
                seconds[phase] += cumulative
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="the plugin's functions to list by cumulative time")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="an empty folder to use as the cold cache and keep (default: a "
                             "temporary one, removed)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="what pytest runs")
    args = parser.parse_args()
    import pytest

    if args.cache_dir is not None and args.cache_dir.exists() and any(args.cache_dir.iterdir()):
        parser.error(f"--cache-dir {args.cache_dir} is not empty: the run must be cold")
    with tempfile.TemporaryDirectory(prefix="t2ibias-phases-") as scratch:
        cache = str(args.cache_dir or scratch)
        command = [*args.pytest_args, "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                   f"--t2i-cache-dir={cache}"]
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        code = pytest.main(command)
        profiler.disable()
        wall = time.perf_counter() - start
    seconds = phase_seconds(pstats.Stats(profiler))
    print(f"\npytest {' '.join(args.pytest_args)}: exit {int(code)}, {wall:.1f} s wall (cold cache)")
    counted = 0.0
    for phase, value in seconds.items():
        print(f"  {phase:42} {value:8.1f} s  {value / wall:6.1%}")
        if "inside" not in phase:
            counted += value
    print(f"  {'the rest (collection, planning, statistics)':42} {wall - counted:8.1f} s  "
          f"{(wall - counted) / wall:6.1%}")
    print(f"\nthe plugin's {args.top} functions with the most cumulative time:")
    plugin = {key: value for key, value in pstats.Stats(profiler).stats.items()  # type: ignore[attr-defined]
              if "pytest_t2ibias" in key[0]}
    for (filename, line, name), value in sorted(plugin.items(), key=lambda item: -item[1][3])[:args.top]:
        where = filename.split("pytest_t2ibias/")[-1]
        print(f"  {value[3]:8.1f} s  {where}:{line}({name})")
    print("cProfile slows Python-heavy phases more than torch-heavy ones; the split is a guide.")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
