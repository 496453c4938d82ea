"""Issue #46: where a cold example run's time goes, by phase: model loads, generation,
judging, BGPS search and probe training, the checks' statistics, reports, and the rest.

    python benchmarks/profile_phases.py example_suites/
    python benchmarks/profile_phases.py example_suites/toy_bgps.t2i.yaml --profile

Runs pytest in this process with a fresh cache (every image generated, every answer scored).
Each phase's entry points (``PHASES``) are wrapped by a clock that gives every second of the
main thread's wall time to the innermost phase running, so the phases never overlap and sum to
the wall time: a check's statistics that generate the images they need count the generating
as generation, and a BGPS search's image reads count as generation too. The rest is
collection, planning, imports and pytest. No profiler runs unless ``--profile`` asks for the
plugin's busiest functions (cProfile, which slows Python-heavy code more than torch's). The
cache writes run on writer threads, beside the phases, and are not counted. A suite whose
BGPS prompts are locked (``*.bgps.lock.json``) reads them and searches nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PHASES: dict[str, tuple[tuple[str, str], ...]] = {
    "model loads": (("pytest_t2ibias.backends._hf", "load_pretrained"),),
    "generation": (("pytest_t2ibias.backends.generator", "DiffusersGenerator._sample"),
                   ("pytest_t2ibias.backends.prompt2prompt", "generate_prompt_sets")),
    "judging": (("pytest_t2ibias.backends.vqa", "ClipAnswerer.score"),
                ("pytest_t2ibias.backends.vqa", "ClipAnswerer.embed_images"),
                ("pytest_t2ibias.backends.vqa", "GenerativeAnswerer.score"),
                ("pytest_t2ibias.backends.classifier", "ClassifierAnswerer.score")),
    "BGPS search (its LLM and UNet reads)": (("pytest_t2ibias.methods.bgps.search", "bgps_search"),),
    "probe training": (("pytest_t2ibias.backends.probe", "train_probe"),),
    "checks' statistics (each look and verdict)": (
        ("pytest_t2ibias.session_plan", "SessionPlan.judge"),
        ("pytest_t2ibias.session_plan", "SessionPlan.chance_to_decide")),
    "reports": (("pytest_t2ibias._session", "T2ISession._write_report"),
                ("pytest_t2ibias.reports.terminal", "summary_table")),
}
"""Phase -> (module, qualified name) entry points."""
REST = "the rest (collection, planning, imports, pytest)"


class PhaseClock:
    """The main thread's wall time, given to the innermost phase running."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.seconds: dict[str, float] = dict.fromkeys([*PHASES, REST], 0.0)
        self.mark = time.perf_counter()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.seconds[self.stack[-1] if self.stack else REST] += now - self.mark
        self.mark = now

    def timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return function(*args, **kwargs)
            self._tick()
            self.stack.append(phase)
            try:
                return function(*args, **kwargs)
            finally:
                self._tick()
                self.stack.pop()
        return wrapper

    def install(self) -> None:
        """Wrap every entry point where it is defined and wherever its name was imported."""
        import importlib

        for phase, entries in PHASES.items():
            for module_name, qualified in entries:
                module = importlib.import_module(module_name)
                owner_name, _, name = qualified.rpartition(".")
                owner = getattr(module, owner_name) if owner_name else module
                original = getattr(owner, name)
                wrapped = self.timed(phase, original)
                setattr(owner, name, wrapped)
                if owner_name:
                    continue
                for other in list(sys.modules.values()):  # ``from .x import f`` copies
                    if getattr(other, "__name__", "").startswith("pytest_t2ibias") \
                            and getattr(other, name, None) is original:
                        setattr(other, name, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile the run and list the plugin's busiest functions")
    parser.add_argument("--top", type=int, default=15, help="with --profile: how many functions")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="an empty folder to use as the cold cache and keep (default: a "
                             "temporary one, removed)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="what pytest runs")
    args = parser.parse_args()
    import pytest

    if args.cache_dir is not None and args.cache_dir.exists() and any(args.cache_dir.iterdir()):
        parser.error(f"--cache-dir {args.cache_dir} is not empty: the run must be cold")
    clock = PhaseClock()
    clock.install()
    with tempfile.TemporaryDirectory(prefix="t2ibias-phases-") as scratch:
        cache = str(args.cache_dir or scratch)
        command = [*args.pytest_args, "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                   f"--t2i-cache-dir={cache}"]
        profiler = cProfile.Profile() if args.profile else None
        start, cpu = time.perf_counter(), os.times()
        clock.mark = start
        if profiler:
            profiler.enable()
        code = pytest.main(command)
        if profiler:
            profiler.disable()
        clock._tick()
        wall, used = time.perf_counter() - start, os.times()
    cpu_seconds = (used.user - cpu.user) + (used.system - cpu.system)
    load = os.getloadavg()
    print(f"\npytest {' '.join(args.pytest_args)}: exit {int(code)}, {wall:.1f} s wall (cold cache), "
          f"{cpu_seconds:.1f} s CPU (this process, every thread), {len(os.sched_getaffinity(0))} "
          f"usable CPUs, load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          f"(1 / 5 / 15 min)")
    for phase, value in clock.seconds.items():
        print(f"  {phase:46} {value:8.1f} s  {value / wall:6.1%}")
    if profiler is None:
        return
    print(f"\nthe plugin's {args.top} functions with the most cumulative time (cProfile):")
    plugin = {key: value for key, value in pstats.Stats(profiler).stats.items()  # type: ignore[attr-defined]
              if "pytest_t2ibias" in key[0]}
    for (filename, line, name), value in sorted(plugin.items(), key=lambda item: -item[1][3])[:args.top]:
        where = filename.split("pytest_t2ibias/")[-1]
        print(f"  {value[3]:8.1f} s  {where}:{line}({name})")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
