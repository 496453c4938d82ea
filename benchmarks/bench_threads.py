"""Issue #36: does the plugin's choice of torch threads keep a cold run fast beside a busy
neighbour? A fixed small cold slice of the example suites, run at idle and beside one
CPU-bound neighbour process, with torch's default threads (one per usable CPU, forced with
``--t2i-threads``) and with the plugin's choice (no option, no OMP_NUM_THREADS).

    python benchmarks/bench_threads.py --repeat 2 --json benchmarks/threads.json

Each run gets a fresh cache (cold: every image generated, every answer scored). Runs
alternate between the conditions so a drift in the machine's load spreads over all of them.
The ratios printed: each condition's median wall time over the idle run with the default
threads, and the neighbour's slowdown with either choice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLICE = ["example_suites/toy_occupations.t2i.yaml", "-k",
         "gender_balance_control or gender_severity_control"]
"""Two control checks of one subject: 2 prompts, a few dozen images and their answers."""


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def one_run(threads: str, images: int) -> tuple[float, str]:
    """Wall seconds of one cold run, and the header line saying the threads torch got."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    with tempfile.TemporaryDirectory(prefix="t2ibias-threads-") as cache:
        command = [sys.executable, "-m", "pytest", *SLICE, "-p", "no:cacheprovider",
                   f"--t2i-cache-dir={cache}", f"--t2i-images-per-prompt={images}",
                   "--t2i-bootstrap=200"]
        if threads == "default":
            command.append(f"--t2i-threads={usable_cpus()}")  # torch's own default
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"the run failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    header = next((line for line in done.stdout.splitlines() if "torch threads" in line), "")
    return wall, header


def neighbour() -> subprocess.Popen:
    """One CPU-bound process: another job on a shared CI box."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--images", type=int, default=24, help="images a prompt (default 24)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    conditions = [(load, threads) for load in ("idle", "neighbour") for threads in ("default", "chosen")]
    walls: dict[str, list[float]] = {f"{load}/{threads}": [] for load, threads in conditions}
    headers: dict[str, str] = {}
    load_before = os.getloadavg()
    for repeat in range(args.repeat):
        for load, threads in conditions:
            busy = neighbour() if load == "neighbour" else None
            try:
                time.sleep(1.0 if busy else 0.0)  # the neighbour running before we start
                wall, header = one_run(threads, args.images)
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
            walls[f"{load}/{threads}"].append(wall)
            headers[f"{load}/{threads}"] = header
            print(f"[{repeat + 1}/{args.repeat}] {load:9} {threads:7} {wall:6.1f} s  {header}",
                  flush=True)
    median = {name: statistics.median(times) for name, times in walls.items()}
    base = median["idle/default"]
    ratios = {f"{name} / idle/default": round(value / base, 3) for name, value in median.items()}
    ratios["neighbour slowdown, default threads"] = round(median["neighbour/default"] / median["idle/default"], 3)
    ratios["neighbour slowdown, chosen threads"] = round(median["neighbour/chosen"] / median["idle/chosen"], 3)
    ratios["chosen / default beside the neighbour"] = round(median["neighbour/chosen"] / median["neighbour/default"], 3)
    for name, value in ratios.items():
        print(f"{name:45} {value:.3f}")
    if args.json:
        args.json.write_text(json.dumps({
            "what": "cold slice of example_suites (" + " ".join(SLICE) + f"), {args.images} "
                    "images a prompt; default = --t2i-threads=<usable CPUs> (torch's default), "
                    "chosen = the plugin's choice; neighbour = one `while True: pass` process",
            "usable_cpus": usable_cpus(), "load_average_before": load_before,
            "load_average_after": os.getloadavg(), "repeat": args.repeat,
            "wall_s": walls, "median_s": median, "ratios": ratios, "headers": headers,
        }, indent=2) + "\n")
        print(f"written to {args.json}")


if __name__ == "__main__":
    main()
